/* The dp pass (par/pass.h): data parallelism on top of a pipeline, its
 * gradient synchronisation as events.
 *
 * Each data-parallel group (par_sim_group over dp and cp: d instances)
 * reduces the gradients of one pipeline rank. The pass adds, per simulated
 * rank, a communication lane that reduces the rank's gradients with the
 * same rank of the group's other instances, bucket by bucket, then runs
 * the reductions other passes asked for at the end of the sync
 * (par_step.finalize: Megatron's finalize_model_grads after
 * finish_grad_sync, such as the tied embedding's all-reduce), and ends
 * each compute lane with the optimizer step (an OPT op) that waits for
 * them:
 *
 *   - Gradients are grouped into buckets in reverse layer order (the order
 *     the backward produces them), per model chunk, as PyTorch DDP and
 *     Megatron-LM's DistributedDataParallel do; the first bucket of a chunk
 *     may be smaller (DDP's first_bucket_cap, 1 MiB by default in PyTorch).
 *   - With overlap, a bucket's collective starts when the backward of its
 *     last layer for the last microbatch has produced it (DDP's bucket-ready
 *     hook): that last backward is split at the bucket boundaries, each piece
 *     followed by a signal. Gradients are taken to appear uniformly over a
 *     layer's backward. Without overlap every reduction starts after the
 *     rank's last backward.
 *   - zero = 1 (ZeRO stage 1 / Megatron's distributed optimizer): buckets are
 *     reduce-scattered, the optimizer updates 1/d of the parameters, then the
 *     updated parameters are all-gathered; optimizer state is divided by d.
 *   - overlap_param_gather (with zero and overlap; Megatron's
 *     --overlap-param-gather): the all-gather of the previous step's update
 *     overlaps this step's forward instead of following the optimizer. As
 *     Megatron's DistributedOptimizer does it (distributed_data_parallel.py
 *     _make_forward_pre_hook, param_and_grad_buffer.py finish_param_sync):
 *     a chunk's buckets back to back in forward order once the chunk is
 *     dispatched (par/dp_lane.c dispatch_points: without interleaving at the
 *     stage's first forward, after its receive; with it aligned across the
 *     pipeline, align_param_gather; with param_gather_start "step",
 *     Megatron-Core 0.5-0.8, the first bucket at the step's start and each
 *     next chunk at the first forward of the one before), and the first
 *     forward of each bucket's layers waits for its own. The first
 *     forward of each chunk is split at the buckets' boundaries, placed by
 *     the layers' backward times (dp has no forward times; the split only
 *     places the waits). The steady state of consecutive steps: the step
 *     starts with the all-gathers.
 *
 * Collectives come from the coll module and run on the same network as the
 * pipeline's transfers, so they contend with them. Static memory: weights,
 * gradients and optimizer state per parameter, the last divided by the
 * group with ZeRO-1 (par_sizes.shard). */
#ifndef PS_PAR_DP_H
#define PS_PAR_DP_H

#include "par/pass.h"

/* Which model chunks are cut into buckets; the others go as one bucket,
 * ready when the chunk's last backward ends. Megatron-Core's
 * DistributedDataParallel cuts only pipeline rank 0's first chunk
 * (PAR_BUCKET_FIRST, par/dp_lane.c par_dp_plan_chunk); PyTorch DDP knows no
 * pipeline and cuts all. */
enum par_bucketed {
    PAR_BUCKET_ALL,   /* every rank's every chunk (PyTorch DDP) */
    PAR_BUCKET_FIRST, /* pipeline rank 0's chunk 0 only (Megatron) */
    PAR_BUCKET_NONE,  /* none (Megatron with
                         --overlap-param-gather-with-optimizer-step) */
};

/* When overlap_param_gather's all-gathers go out (par/dp_lane.c
 * dispatch_points): Megatron-Core changed it between 0.8 and 0.9. */
enum par_pg_start {
    PAR_PG_FORWARD, /* core >= 0.9: the first bucket by the first forward
                       pre-hook, after the stage's input arrived */
    PAR_PG_STEP,    /* core 0.5-0.8: the first bucket by
                       DistributedOptimizer.zero_grad, at the step's
                       start */
};

extern const par_pass par_dp_pass;

/* The ranks each data-parallel group's collectives count as on one node
 * (coll_ranks_per_node) when every group has the same, else 0. */
int32_t par_dp_ranks_per_node(const par_step *st);

/* The elements the distributed optimizer (ZeRO-1) pads a model chunk of
 * `params` parameters with, its gradient at grad_bytes a parameter and
 * its buffer sharded over `shard` ranks: one bucket, or with `cut` the
 * first of first_bucket_bytes and the others of bucket_bytes, each
 * bucket's end padded to a multiple of lcm(shard, 128) elements. The
 * rule the dp pass applies (par/dp_lane.c close_bucket), for estimates
 * that know a chunk's parameters but not its layers (ps.search's closed
 * form, lua/pipesim/search_cost.lua, through core.dp_pad). */
double par_dp_pad_elements(double params, int32_t shard, int cut,
                           double grad_bytes, double first_bucket_bytes,
                           double bucket_bytes);

/* last[c]: index of lane's last gradient-producing op (a B, a W, the
 * backward half of an FB) of chunk c (c < v), or -1: the order in which
 * the dp pass closes a rank's chunks into buckets, and in which live mode
 * lays out a rank's gradients (step/pipe_live.c). One pass, O(ops). */
void par_dp_last_backwards(const prog_lane *lane, int32_t v, int32_t *last);

#endif
