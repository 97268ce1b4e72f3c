/* Internal to par/dp.c and par/dp_lane.c: the dp pass's view of a step,
 * its bucket plans and the rewrite of a compute lane. Not a public
 * interface (par/dp.h is). */
#ifndef PS_PAR_DP_IMPL_H
#define PS_PAR_DP_IMPL_H

#include <stdint.h>

#include "par/dp.h"

/* The pass's view of a step: par_step's settings with the group sizes
 * worked out. */
typedef struct dp_config {
    const par_step *st;
    int32_t p, v, n; /* pipeline ranks, chunks per rank, instances */
    int32_t d;       /* instances in each data-parallel group */
    int32_t shard;   /* ranks ZeRO-1 shards the optimizer over */
    int zero;        /* ZeRO-1 with d > 1 */
    int pg;          /* overlap_param_gather in force */
    int bucketed;    /* enum par_bucketed */
    int overlap;
    double optimizer_seconds;
    const int32_t *first, *count;
    const double *layer_params, *layer_bwd;
    double grad_bytes, weight_bytes, bucket_bytes, first_bucket_bytes;
    int32_t ranks_per_node;
    const uint8_t *sync; /* per pipeline rank: has a sync to wait for */
} dp_config;

typedef struct bucket {
    double bytes;  /* gradient bytes reduced */
    double params; /* parameters in it (for ZeRO's all-gather) */
    double frac;   /* fraction of the last backward done when it is ready */
    int32_t chunk;
} bucket;

typedef struct plan {
    bucket *b;
    int32_t n, cap;
} plan;

/* The tag of the forward's waits for overlap_param_gather's all-gathers
 * (dp_exposed counts them). */
#define DP_TAG_GATHER (-2)

/* Buckets a pipeline rank may have: 2^20 hold 40 TB of gradients at
 * Megatron-LM's default 40M parameters a bucket; more are a bucket size
 * given in the wrong unit (grad_sync.bucket = 25 for "25 MB"). */
#define DP_MAX_BUCKETS (1 << 20)

/* Appends to pl the buckets of model stage `stage` (chunk `chunk` of
 * pipeline rank r): layers walked last to first, each layer's gradient
 * produced uniformly over its backward; -1 when out of memory, -2 when
 * pl would pass DP_MAX_BUCKETS. */
int par_dp_plan_chunk(const dp_config *c, int32_t r, int32_t stage,
                      int32_t chunk, plan *pl);

/* last[c]: index of the lane's last backward of chunk c (c < v), or -1;
 * and whether op i of lane is the last backward of its chunk. */
void par_dp_last_backwards(const prog_lane *lane, int32_t v, int32_t *last);
int par_dp_is_last_backward(const prog_lane *lane, const int32_t *last,
                            int32_t i);

/* The forward's order of a lane's buckets (overlap_param_gather) into
 * order; first and seq: v scratch each. Whether forward position q opens
 * its chunk's buckets. */
void par_dp_forward_order(const prog_lane *lane, const plan *pl, int32_t v,
                          int32_t *first, int32_t *seq, int32_t *order);
int par_dp_chunk_start(const plan *pl, const int32_t *order, int32_t q);

/* Rewrites a compute lane for the sync (par/dp_lane.c); -1 when out of
 * memory. */
int par_dp_rewrite_lane(const dp_config *c, prog_lane *lane, const plan *pl,
                        const int32_t *ready, int32_t synced, int32_t updated,
                        int32_t stage, int32_t *last, const int32_t *gathered,
                        const int32_t *reached, int32_t *scratch);

#endif
