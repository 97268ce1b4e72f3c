/* The ep pass: expert parallelism's token all-to-alls (Megatron-LM's
 * MoEAlltoAllTokenDispatcher). Each MoE layer's forward is cut at its
 * dispatch and its combine, each an all-to-all(v) inside the layer's
 * expert-parallel group (the layout's expert side, par/layout.h: Megatron's
 * 'ep' group of parallel_state.py) run as point-to-point flows of every
 * rank of the group at once on the network, so that NVLink inside a node,
 * the NICs across and the pipeline and gradient traffic beside them share
 * their links as the engine's sharing says. The backward mirrors them: the
 * combine's gradient (dispatch-sized: DeepSeek-V3 sends it in FP8 as its
 * dispatch) then the dispatch's gradient (combine-sized, BF16).
 *
 * A DualPipe / DualPipeV overlapped forward-backward (FB_F then FB_B, an
 * F&B of sched/sched.h) runs its all-to-alls on a communication lane of
 * its own beside its compute, as DeepSeek-V3's report (section 3.2.1)
 * pairs one microbatch's dispatch and combine with the other's compute;
 * the SMs the communication kernels take slow the overlapped compute by
 * 1 / (1 - comm_share), as the TP-overlap model spends SMs
 * (models/roofline.lua te_overlap), and the pair's end waits for its
 * all-to-alls. Every other F and B waits for its all-to-alls in place.
 *
 * Two entries in par_passes: par_ep_pass before dp rewrites the compute
 * lanes (its communication lanes' ops kept in par_ep_state), and
 * par_ep_comm_pass after dp adds those lanes, since the dp pass finds its
 * own communication lanes right after the compute lanes. */
#ifndef PS_PAR_EP_H
#define PS_PAR_EP_H

#include "par/pass.h"

/* The tag of the all-to-alls' sends, receives and waits (ep_exposed). */
#define PAR_EP_TAG (-7)

/* Frees what s holds (par/pass.h); harmless twice. */
void par_ep_state_free(par_ep_state *s);

/* The expert gradients' sync over the expert data-parallel group
 * (par/ep_sync.c), run by par_ep_comm_pass: whether the step has one (the
 * group differs from dp x cp and some layer has expert parameters); its
 * collectives, at the compute lane of every cluster rank (at[rank], -1:
 * not simulated); the experts' static memory; its waits, added to the
 * gradient sync's exposed time. */
int par_ep_sync_applies(const par_step *st);
int par_ep_sync_lower(par_step *st, const int32_t *at, ps_err *err);
void par_ep_sync_memory(const par_step *st, double *rank_static);
void par_ep_sync_exposed(const par_step *st, double *exposed);

/* The compute lanes of a group's n ranks (at: the lane of each cluster
 * rank, -1 when not simulated) into lane: 1 when all are simulated, 0
 * when none is (a folded TP rank's group), PS_ERR when only some are
 * (what names the group in the message). */
int par_ep_group_lanes(const int32_t *at, const int32_t *ranks, int32_t n,
                       int32_t *lane, const char *what, int32_t gi,
                       ps_err *err);

/* The seconds rank me's share of an all-to-all takes with nothing else on
 * the network (par/ep_est.c): bytes[k] to peers[k] (n of them), the
 * sends that leave by the same first link of their route serialised, the
 * longest such group plus the largest latency. key and sum: n entries of
 * scratch. An estimate for the SMs the all-to-all's kernels take from the
 * compute beside it (par/ep.c side_piece). */
double par_ep_a2a_estimate(const net *nw, int32_t me, const int32_t *peers,
                           const double *bytes, int32_t n, int32_t *key,
                           double *sum);

extern const par_pass par_ep_pass;
extern const par_pass par_ep_comm_pass;

#endif
