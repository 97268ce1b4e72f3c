/* What par/fold.c shares with the streaming check (par/fold_stream.c). */
#ifndef PS_PAR_FOLD_IMPL_H
#define PS_PAR_FOLD_IMPL_H

#include "par/fold.h"

#define FOLD_SIDE_NONE UINT32_MAX
#define FOLD_SIDE_DONE (UINT32_MAX - 1u)

/* Reallocates *a to n entries (at least one); -1 when out of memory. */
int par_fold_grow(int32_t **a, int64_t n);

/* The cluster rank of simulated rank x's instance shifted by k, same
 * pipeline rank; -1 when x is not simulated. */
int32_t par_fold_shifted(const par_fold *f, const par_sim *sim, int32_t x,
                         int32_t k);

/* With f->stream_mode: message a's side (send or receive) is the image of
 * instance 0's message img; 0 when that contradicts its other side (the
 * send of an instance-0 message pairs with one receive, and back). */
int par_fold_note_side(par_fold *f, int32_t a, int send, int32_t img);

/* 1 when shifting instances by s maps nodes to nodes one to one and keeps
 * every simulated rank's static bytes (fills f->shift). */
int par_fold_net_symmetric(par_fold *f, const par_sim *sim, const net *nw,
                           const double *st, int32_t s);

/* Matches lane a of an instance shifted by k with its representative's
 * lane b op by op, a batch's ops in any order; with to given, out (a's
 * ops) receives the times of each op's match. */
int par_fold_match_lane(par_fold *f, const par_sim *sim, const prog_lane *a,
                        const prog_lane *b, int32_t k, const prog_lane *to,
                        prog_op *out);

/* par_fold_unfold of a fold par_fold_build checked (par/fold_stream.c's
 * par_fold_unfold picks it or the streamed one). */
void par_fold_unfold_shifted(par_fold *f, prog_set *full, const par_sim *sim);

#endif
