/* The parallel layout of a training step: the size of every dimension and
 * Megatron-LM's rank order, answering which cluster ranks form each group,
 * where a rank sits, and how a group spreads over nodes and NICs.
 *
 * Megatron-Core builds its process groups with two RankGenerators over one
 * world (megatron/core/parallel_state.py, initialize_model_parallel and
 * generate_masked_orthogonal_rank_groups; tag core_v0.19.0, commit 5be9626;
 * the same in core 0.20.0, commit d98e8a6, whose gtp_remat axis is 1 by
 * default): the dense side over tp-cp-ep-dp-pp with ep = 1, and the expert
 * side over the same order with tp = expert_tensor_parallel_size (etp,
 * tp by default), cp = 1 and dp = world / (etp ep pp) (MoE parallel
 * folding: attention and experts fold different groups over the same
 * ranks). The first dimension of the order varies fastest: rank = tp_rank
 * + tp (cp_rank + cp (dp_rank + dp pp_rank)) on the dense side. The
 * alternative order tp-cp-ep-pp-dp is Megatron's --use-tp-pp-dp-mapping
 * (megatron/training/initialize.py) and pipesim's placement "pp_inner".
 *
 * An explicit list of cluster ranks replaces the identity: entry i (from 0)
 * is the cluster rank of the layout's rank i in the pp_inner order, that is
 * TP rank innermost, then context, then stage, then replica (ps.run's
 * `ranks`): with a list the layout numbers its ranks pp_inner, whatever the
 * order asked. Nothing here allocates; a layout borrows its list. */
#ifndef PS_PAR_LAYOUT_H
#define PS_PAR_LAYOUT_H

#include <stdint.h>

#include "base/err.h"

/* The dimensions, in Megatron's default order (innermost first). On the
 * expert side PAR_TP is the expert tensor-parallel rank, PAR_DP the expert
 * data-parallel rank and PAR_CP is 1. */
enum par_dim { PAR_TP, PAR_CP, PAR_EP, PAR_DP, PAR_PP, PAR_NDIMS };

/* A group's dimensions as a mask: PAR_BIT(PAR_DP) | PAR_BIT(PAR_CP) is
 * Megatron's 'dp-cp' group; with PAR_EXPERT the expert generator's. */
#define PAR_BIT(d) (1u << (d))
#define PAR_EXPERT 0x100u

/* The most ranks a layout spans (ps.cluster's limit, net/net.h). */
#define PAR_MAX_RANKS (1 << 20)

enum par_order {
    PAR_DP_INNER, /* tp-cp-ep-dp-pp: Megatron's default ("dp_inner") */
    PAR_PP_INNER  /* tp-cp-ep-pp-dp: --use-tp-pp-dp-mapping ("pp_inner") */
};

/* What data parallelism shards across its group (ZeRO's stages). */
enum par_shard {
    PAR_SHARD_NONE,      /* plain DDP: everything replicated */
    PAR_SHARD_OPTIMIZER, /* ZeRO-1, Megatron's distributed optimizer */
    PAR_SHARD_GRADS,     /* ZeRO-2 (not modelled yet) */
    PAR_SHARD_PARAMS     /* ZeRO-3 / FSDP (not modelled yet) */
};

typedef struct par_sizes {
    int32_t tp, cp, ep, dp, pp;
    int32_t etp; /* expert tensor parallelism; 0: tp (Megatron's default) */
    int32_t vp;  /* model chunks per pipeline rank (virtual stages) */
    int shard;   /* enum par_shard */
    /* ranks of the data-parallel group one shard spans (hybrid sharding,
     * Megatron's num_distributed_optimizer_instances = dp / shard_group);
     * 0: the whole group */
    int32_t shard_group;
} par_sizes;

/* One of Megatron's RankGenerators: the size and the stride of each
 * dimension (by enum par_dim) in the order's rank numbering. */
typedef struct par_gen {
    int32_t size[PAR_NDIMS];
    int32_t stride[PAR_NDIMS];
    int32_t world;
} par_gen;

typedef struct par_layout {
    par_sizes s; /* etp filled in */
    enum par_order order;
    int32_t world;
    int32_t edp;           /* expert data parallelism: world / (etp ep pp) */
    par_gen dense, expert; /* the two generators, numbered in `order` */
    const int32_t *ranks;  /* explicit cluster ranks (world), or NULL */
} par_layout;

/* Sets every size to 1 (etp 0: tp), no sharding: a layout of one rank. */
void par_sizes_init(par_sizes *s);

/* tp cp dp pp in 64 bits: the world the sizes make (sizes up to
 * PAR_MAX_RANKS each cannot overflow it). */
int64_t par_sizes_world(const par_sizes *s);

/* Fills L from s and order. ranks, when not NULL, holds world cluster
 * ranks in the list order above (borrowed; the caller checks their range
 * and uniqueness, which need the cluster). Fails with a message naming
 * the size ("tp must be at least 1, got 0"), a world over PAR_MAX_RANKS
 * ("tp 4 x cp 1 x dp 512 x pp 1024 is 2097152 ranks, more than the limit
 * of 1048576"), an expert side that does not divide the world ("etp 2 x ep
 * 3 x pp 1 (6 ranks) does not divide the world of 8 ranks"), or, as
 * Megatron asserts, pp_inner with an expert data-parallel size unlike dp
 * while pp > 1. */
int par_layout_init(par_layout *L, const par_sizes *s, enum par_order order,
                    const int32_t *ranks, ps_err *err);

/* tp cp dp pp: the ranks the layout spans. */
static inline int32_t par_world(const par_layout *L)
{
    return L->world;
}

/* Parses "dp_inner", "pp_inner" and Megatron's own spellings
 * "tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp". Fails with "unknown placement 'x'
 * (expected dp_inner or pp_inner)". */
int par_parse_order(const char *name, enum par_order *order, ps_err *err);

/* "tp-cp-ep-dp-pp" or "tp-cp-ep-pp-dp". */
const char *par_order_name(enum par_order order);

/* The cluster rank of dense coordinates c (by enum par_dim; c[PAR_EP]
 * ignored), each within its size. */
int32_t par_rank(const par_layout *L, const int32_t c[PAR_NDIMS]);

/* The dense coordinates of layout rank i (0 <= i < world, numbered in the
 * layout's order: the cluster rank itself unless a list is given), and
 * with expert != 0 its expert-side coordinates (PAR_TP the expert tensor
 * rank, PAR_EP, PAR_DP the expert data-parallel rank, PAR_PP). */
void par_coords(const par_layout *L, int32_t i, int expert,
                int32_t c[PAR_NDIMS]);

/* The cluster rank of layout rank i (the list's entry, or i). */
int32_t par_cluster(const par_layout *L, int32_t i);

/* The groups over the dimensions of mask (PAR_BIT(...) | PAR_EXPERT), as
 * Megatron's get_ranks(token): par_group_count groups of par_group_size
 * ranks. par_group writes group g's cluster ranks into out in Megatron's
 * order (the first dimension of the order fastest) and returns its size.
 * A mask without dimensions is the groups of one rank. */
int32_t par_group_size(const par_layout *L, unsigned mask);
int32_t par_group_count(const par_layout *L, unsigned mask);
int32_t par_group(const par_layout *L, unsigned mask, int32_t g, int32_t *out);

/* The index of the group over mask that holds layout rank i. */
int32_t par_group_of(const par_layout *L, unsigned mask, int32_t i);

/* How a group spreads over a cluster of gpus_per_node GPUs per node (rank
 * r on node r / gpus_per_node) with nics_per_node NICs each (GPU g of a
 * node on NIC g nics / gpus_per_node, as net/net.h builds clusters; 0:
 * unknown). */
typedef struct par_span {
    int32_t nodes;    /* distinct nodes the group's ranks sit on */
    int32_t per_node; /* the most of its ranks on one node */
    int32_t per_nic;  /* the most of its ranks behind one NIC (0: unknown) */
} par_span;

/* The span of n cluster ranks (a group from par_group). gpus_per_node < 1
 * counts one rank per node. O(n) when the ranks ascend (every group of a
 * layout without a list does), O(n^2) otherwise. */
void par_span_of(const int32_t *ranks, int32_t n, int32_t gpus_per_node,
                 int32_t nics_per_node, par_span *out);

#endif
