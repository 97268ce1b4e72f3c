/* The ranks a step simulates. Ranks that run the same program at the same
 * times (the t ranks of a TP group, in lockstep) may be simulated once: a
 * dimension is "folded" when one rank stands for its whole group. The
 * pipeline dimension is never folded. An instance is one simulated copy of
 * the pipeline: one value of every unfolded dimension but PP. Simulated
 * rank k = i p + r is pipeline rank r of instance i, on cluster rank
 * rank_of[k]; it stands for the cluster ranks that differ from it only in
 * folded dimensions, its members.
 *
 * Instances are numbered data-parallel rank outermost, then context, then
 * tensor: i = (dp_rank cp' + cp_rank) tp' + tp_rank, where tp' and cp' are
 * the sizes of the unfolded dimensions (1 when folded). With TP folded and
 * no CP, instance j is data-parallel replica j, as before the layout. */
#ifndef PS_PAR_SIM_H
#define PS_PAR_SIM_H

#include <stdint.h>

#include "base/err.h"
#include "par/layout.h"

typedef struct par_sim {
    int32_t p;                   /* pipeline ranks */
    int32_t n;                   /* instances */
    int fold[PAR_NDIMS];         /* 1: one rank stands for the dimension */
    int32_t unfolded[PAR_NDIMS]; /* the dimension's size, 1 when folded */
    int32_t *rank_of; /* n p: cluster rank of simulated rank i p + r */
    int32_t *coord;   /* n PAR_NDIMS: instance i's coordinates at
                         i PAR_NDIMS (PP 0, folded ones 0) */
    int32_t per;      /* members per simulated rank */
    int32_t *member;  /* n p per: simulated rank k's members at
                         k per, TP rank fastest, its own first */
    int32_t cap_ranks, cap_coords, cap_members; /* allocated entries */
} par_sim;

/* Fills s for layout L with fold[d] != 0 for the dimensions simulated once
 * (PP never is; EP is folded on the dense side, where its size is 1).
 * Grows s's arrays as needed and keeps them (a sweep reuses one par_sim);
 * a zeroed par_sim is empty. Fails only when out of memory. O(world). */
int par_sim_build(par_sim *s, const par_layout *L, const int fold[PAR_NDIMS],
                  ps_err *err);

/* The layout coordinates (by enum par_dim) of simulated rank k's q-th
 * member. */
void par_sim_member_coords(const par_sim *s, const par_layout *L, int32_t k,
                           int32_t q, int32_t c[PAR_NDIMS]);

/* Releases s's arrays; harmless on a zeroed or freed s. */
void par_sim_free(par_sim *s);

/* The instances that differ from instance i only in the dimensions of mask
 * (unfolded ones; a folded dimension of mask adds nothing): Megatron's
 * group over mask as instances, in its order (the first dimension of the
 * order fastest). Writes them into out and returns how many. */
int32_t par_sim_group(const par_sim *s, unsigned mask, int32_t i, int32_t *out);

/* 1 when instance i is the first of its group over mask (the group's
 * index owner). */
int par_sim_group_head(const par_sim *s, unsigned mask, int32_t i);

#endif
