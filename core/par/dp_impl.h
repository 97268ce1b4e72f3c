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
    int32_t shard;   /* ranks one shard spans (shard_group, else d) */
    int zero;        /* the optimizer sharded (stage >= 1) with d > 1 */
    int stage;       /* ZeRO stage, enum par_shard (0..3) */
    int fsdp;        /* stage 2 or 3 with d > 1: every backward reduces
                        (par/fsdp.c) */
    int32_t reshard; /* stage 3: the group each unit's parameters are
                        resharded to after its forward (shard: all of it,
                        1: none kept sharded, no gather before the
                        backward) */
    int pg;          /* overlap_param_gather in force */
    int pg_start;    /* enum par_pg_start: when its all-gathers go out */
    int bucketed;    /* enum par_bucketed */
    int per_layer;   /* a bucket per layer (stage 3's units) */
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
    double pad;     /* elements the distributed optimizer padded in */
    int count_only; /* 1: sum pad only, store no bucket */
} plan;

/* ZeRO-2/3's collectives of one pipeline rank, in the order its lane
 * needs them (par/fsdp.c par_fsdp_events): a reduce-scatter per bucket of
 * every backward, and with stage 3 an all-gather per unit (one bucket per
 * layer) before each forward and each backward. The same in every
 * instance, whose lanes run one schedule. */
typedef struct fsdp_events {
    int32_t *red, nred; /* each reduce-scatter's bucket */
    int32_t *gat, ngat; /* each all-gather's bucket */
    uint8_t *bwd;       /* per all-gather: 1 before a backward */
} fsdp_events;

/* One data-parallel group's view for ZeRO-2/3's lowering: its members'
 * lanes, cluster ranks and signal bases (d each). */
typedef struct dp_group {
    int32_t d;
    const int32_t *comm, *gather; /* reduce and all-gather lanes */
    const int32_t *ranks, *base;
    int32_t *sub_lanes, *sub_ranks; /* scratch, d each */
} dp_group;

/* The tag of the forward's waits for overlap_param_gather's all-gathers
 * (dp_exposed counts them). */
#define DP_TAG_GATHER (-2)

/* Buckets a pipeline rank may have: 2^20 hold 40 TB of gradients at
 * Megatron-LM's default 40M parameters a bucket; more are a bucket size
 * given in the wrong unit (grad_sync.bucket = 25 for "25 MB"). */
#define DP_MAX_BUCKETS (1 << 20)

/* Appends to pl the buckets of model stage `stage` (chunk `chunk` of
 * pipeline rank r): layers walked last to first, each layer's gradient
 * produced uniformly over its backward, with ZeRO-1 each bucket's end
 * padded to a multiple of lcm(shard, 128) elements as Megatron's
 * distributed optimizer pads it; -1 when out of memory, -2 when
 * pl would pass DP_MAX_BUCKETS. */
int par_dp_plan_chunk(const dp_config *c, int32_t r, int32_t stage,
                      int32_t chunk, plan *pl);

/* The elements par_dp_plan_chunk pads model stage `stage` (chunk `chunk`
 * of pipeline rank r) with; 0 without ZeRO-1's padding. Allocates
 * nothing, for the static memory (dp_memory). */
double par_dp_chunk_pad(const dp_config *c, int32_t r, int32_t stage,
                        int32_t chunk);

/* Whether op i of lane is the last backward of its chunk (last from
 * par_dp_last_backwards, par/dp.h). */
int par_dp_is_last_backward(const prog_lane *lane, const int32_t *last,
                            int32_t i);

/* The forward's order of a lane's buckets (overlap_param_gather) into
 * order; first and seq: v scratch each. Whether forward position q opens
 * its chunk's buckets. */
void par_dp_forward_order(const prog_lane *lane, const plan *pl, int32_t v,
                          int32_t *first, int32_t *seq, int32_t *order);
int par_dp_chunk_start(const plan *pl, const int32_t *order, int32_t q);

/* Does forward position q open a group of all-gathers dispatched
 * together (a chunk's, or with PAR_PG_STEP the first chunk's buckets
 * after its first, which goes alone at the step's start)? */
int par_dp_dispatch_start(const dp_config *c, const plan *pl,
                          const int32_t *order, int32_t q);

/* Rewrites a compute lane for the sync (par/dp_lane.c); -1 when out of
 * memory. */
int par_dp_rewrite_lane(const dp_config *c, prog_lane *lane, const plan *pl,
                        const int32_t *ready, int32_t synced, int32_t updated,
                        int32_t stage, int32_t *last, const int32_t *gathered,
                        const int32_t *reached, int32_t *scratch);

/* One collective of op over `bytes` on n lanes of the listed cluster
 * ranks (rpn: coll_ranks_per_node's, 0 unknown), with the dp settings'
 * algorithm and the protocol rule, tagged tag (par/fsdp.c). */
int par_dp_coll(par_step *st, coll_forks *forks, const int32_t *lanes,
                const int32_t *ranks, int32_t n, int32_t rpn, int op,
                double bytes, int32_t tag, ps_err *err);

/* One collective of op over `bytes` on the members' lanes (g->comm or
 * g->gather, by `lanes`), in consecutive subgroups of `width` members (a
 * shard group, or the group a unit was resharded to), as hybrid sharding
 * places them (Megatron's intra_distributed_optimizer_instance_group,
 * FSDP's HSDP mesh: shard inner, replicate outer); a reduce-scatter over
 * subgroups narrower than the group is followed by the all-reduce of
 * its 1/width shard across them. */
int par_dp_collective(const dp_config *c, par_step *st, coll_forks *forks,
                      const dp_group *g, const int32_t *lanes, int op,
                      double bytes, int32_t width, int32_t tag, ps_err *err);

/* Builds rank r's ZeRO-2/3 events from its lane (before the rewrite);
 * -1 out of memory, -3 when the lane has a split backward (W) or
 * DualPipe's overlapped F&B, which ZeRO-2/3 do not model. */
int par_fsdp_events(const dp_config *c, const prog_lane *lane, const plan *pl,
                    fsdp_events *ev);
void par_fsdp_events_free(fsdp_events *ev);

/* Rewrites a compute lane for ZeRO-2/3 (par/fsdp_lane.c) with the signals
 * from base: ready[e] = base + e (e < ev->nred), synced base + nred,
 * updated + 1, gathered[g] = base + nred + 2 + g, started[g] after them;
 * -1 when out of memory. */
int par_fsdp_rewrite_lane(const dp_config *c, prog_lane *lane, const plan *pl,
                          const fsdp_events *ev, int32_t base, int32_t stage);

/* The group's ZeRO-2/3 collectives on its lanes: every reduce-scatter
 * after its bucket's ready signal, every all-gather after the compute of
 * the unit before (the one prefetched unit FSDP's rate limit allows) and
 * raising gathered. */
int par_fsdp_lower_group(const dp_config *c, par_step *st, coll_forks *forks,
                         const dp_group *g, const plan *pl,
                         const fsdp_events *ev, ps_err *err);

/* Static bytes per parameter of a sharded rank (the ZeRO paper's) and the
 * buffers beyond them of pipeline rank r (par/fsdp.c). */
double par_fsdp_per_param(const par_step *st, int stage, int32_t shard);
double par_fsdp_buffers(const par_step *st, int stage, int32_t shard,
                        int32_t reshard, int32_t r);

#endif
