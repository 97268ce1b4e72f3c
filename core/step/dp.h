/* Data parallelism on top of a pipeline: gradient synchronisation as events.
 *
 * A run with d replicas has d copies of the pipeline's compute lanes (lane
 * j*p + r is pipeline rank r of replica j). dp_lower adds, per rank, a
 * communication lane that reduces the rank's gradients with the same rank of
 * the other replicas, bucket by bucket, and ends each compute lane with the
 * optimizer step (an OPT op) that waits for the reductions:
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
 *     dispatched (step/dp.c dispatch_points: without interleaving at the
 *     stage's first forward, after its receive; with it aligned across the
 *     pipeline, align_param_gather), and the first forward of each
 *     bucket's layers waits for its own. The first forward of each chunk is
 *     split at the buckets' boundaries, placed by the layers' backward
 *     times (dp has no forward times; the split only places the waits).
 *     The steady state of consecutive steps: the step starts with the
 *     all-gathers.
 *
 * Collectives come from the coll module and run on the same network as the
 * pipeline's transfers, so they contend with them. */
#ifndef PS_DP_H
#define PS_DP_H

#include <stdint.h>

#include "base/err.h"
#include "coll/coll.h"
#include "net/net.h"
#include "sim/prog.h"

/* One gradient-sync collective dp_lower appended, for the `collective`
 * table: what ran (auto's algorithm and protocol) and where its ops are,
 * ops lo[j] .. hi[j] - 1 of lane lanes[j] for replica j. */
typedef struct dp_coll {
    int op, algorithm, protocol; /* enum coll_op, coll_algo, coll_proto */
    int32_t d;                   /* replicas taking part */
    double bytes;
    int32_t *lanes, *lo, *hi; /* d each, one block owned by the log */
} dp_coll;

typedef struct dp_log {
    dp_coll *c;
    int32_t n, cap;
} dp_log;

/* Empties log (keeping its array); dp_log_free releases everything. */
void dp_log_clear(dp_log *log);
void dp_log_free(dp_log *log);

/* After the engine has run ps: the first start and last end among the ops
 * of collective k of log. */
void dp_log_span(const dp_log *log, const prog_set *ps, int32_t k, double *t0,
                 double *t1);

/* Which model chunks are cut into buckets; the others go as one bucket,
 * ready when the chunk's last backward ends. Megatron-Core's
 * DistributedDataParallel cuts only pipeline rank 0's first chunk
 * (DP_BUCKET_FIRST, step/dp.c plan_chunk); PyTorch DDP knows no pipeline and
 * cuts all. */
enum dp_bucketed {
    DP_BUCKET_ALL,   /* every rank's every chunk (PyTorch DDP) */
    DP_BUCKET_FIRST, /* pipeline rank 0's chunk 0 only (Megatron) */
    DP_BUCKET_NONE,  /* none (Megatron with
                        --overlap-param-gather-with-optimizer-step) */
};

typedef struct dp_config {
    int32_t p, v, d;        /* pipeline ranks, chunks per rank, replicas */
    const int32_t *rank_of; /* p*d cluster ranks, index j*p + r */
    /* per model stage s (p*v): its layers' parameters and backward seconds,
     * layers first[s] .. first[s] + count[s] - 1 of the arrays */
    const int32_t *first, *count;
    const double *layer_params, *layer_bwd;
    double grad_bytes;   /* per parameter (what is reduced) */
    double weight_bytes; /* per parameter (what ZeRO all-gathers) */
    double bucket_bytes; /* bucket capacity */
    double first_bucket_bytes;
    int bucketed;        /* enum dp_bucketed: which chunks are cut */
    int algorithm;       /* enum coll_algo or COLL_AUTO */
    unsigned candidates; /* for COLL_AUTO, as in coll_spec */
    int overlap;
    int zero;                 /* 0 or 1 */
    int overlap_param_gather; /* zero's all-gather beside the forward */
    double optimizer_seconds; /* OPT op of a rank holding all its params */
    int32_t ranks_per_node;   /* for hierarchical algorithms, 0 unknown */
    coll_hw hw;               /* the cluster's NCCL hardware (coll/coll.h) */
    dp_log *log;              /* NULL, or where dp_lower lists its
                                 collectives */
    /* live mode (step/pipe_live.c): NULL, or where the collectives note
     * what each message moves; with it the reductions run without NCCL's
     * protocols (TCP has none) */
    coll_move_log *moves;
} dp_config;

/* Appends the gradient sync to ps, whose first p*d lanes are the replicas'
 * compute lanes (replica-major). Fails on bad settings (named) or when
 * memory runs out. */
int dp_lower(const dp_config *c, prog_set *ps, const net *nw, ps_err *err);

/* After the engine has run ps: the seconds each compute lane (index j*p + r)
 * waited for gradient sync after its last backward, plus, with ZeRO, the
 * parameter all-gather that follows the optimizer step, or, with
 * overlap_param_gather, the forward's waits for it. */
void dp_exposed(const dp_config *c, const prog_set *ps, double *exposed);

#endif
