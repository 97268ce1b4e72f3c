/* The records of a training step (step/pipe.h): its layers, its config and
 * its result, below every step/ file so that the files computing a step's
 * parts (costs, report, live mode) read them without including the driver's
 * header. Plain structs, and the initialisers of two of them. */
#ifndef PS_PIPE_TYPES_H
#define PS_PIPE_TYPES_H

#include <stdint.h>

#include "base/err.h"
#include "coll/coll.h"
#include "live/live.h"
#include "net/net.h"
#include "par/layout.h"
#include "rec/row.h"
#include "sched/sched.h"
#include "sim/eng.h"

typedef struct pipe_layer {
    const char *name; /* may be NULL */
    double fwd_flops; /* used when fwd_time < 0 */
    double bwd_flops; /* used when bwd_time < 0; < 0: twice the forward */
    double fwd_time;  /* seconds, < 0 when given as FLOPs */
    double bwd_time;  /* seconds, < 0 when not given */
    double params;
    double act_bytes; /* kept from forward to backward per microbatch */
    double out_bytes; /* sent to the next stage per microbatch */
    double in_bytes;  /* input size, < 0: the previous layer's out_bytes */
    /* split backward (B: input gradient, W: weight gradient), each < 0
     * when not given; B as FLOPs only when the forward is FLOPs, like
     * bwd_flops. A total alone splits evenly (for a GEMM the data- and
     * weight-gradient GEMMs each cost one forward); one part given makes
     * the other the total minus it. */
    double bwd_input_flops, bwd_weight_flops;
    double bwd_input_time, bwd_weight_time;
    double bwd_weight_bytes; /* of act_bytes, what W needs; < 0: all */
    /* Under checkpointing: seconds of this layer's recompute (< 0: its
     * forward) and bytes it keeps from F to B (< 0: not given). When no
     * layer of a stage gives kept_bytes the stage keeps its input, as
     * before; otherwise it keeps the sum of kept_bytes, counting act_bytes
     * for layers that do not say (parallel.lua: Megatron's per-block
     * checkpoints, embedding and head not recomputed). */
    double recompute_time, kept_bytes;
    /* Tensor-parallel collectives per microbatch in this layer's F, B and
     * R (seconds, recorded only: parallel.lua has put the exposed part in
     * the layer's times), and the part on the compute stream; < 0: 0. */
    double tp_comm_time, tp_exposed_time;
    /* parameters this layer shares with the model's first layer (a tied
     * output layer's copy of the embedding, par/tied.h); < 0: none */
    double shared_params;
    /* Static bytes the layer holds on its rank beyond params x the run's
     * per-parameter bytes (weight + gradient + optimizer state): FP8
     * weight copies (lua/pipesim/models/fp8.lua); negative where the
     * layer keeps its weights in fewer bytes than weight_bytes (FP8
     * parameters). 0: none. */
    double static_bytes;
    /* Bytes the layer allocates only while it computes (its forward or
     * backward) and frees before it ends: context parallelism's K/V ring
     * buffers (lua/pipesim/cp.lua). One layer computes at a time on a
     * rank, so a rank holds the largest of its layers' for the whole
     * step (par/pp.c); 0: none. */
    double work_bytes;
    /* A MoE layer under expert parallelism (par/pass.h par_moe, the ep
     * pass par/ep.h): the bytes this rank sends in all to the other ep - 1
     * ranks of its expert-parallel group in the forward's dispatch and
     * combine (0: not a MoE layer), and the seconds of the forward before
     * the dispatch and between dispatch and combine, of the backward
     * before the combine's gradient and between the two gradients' (0
     * when not given; each within the layer's forward or backward) */
    double moe_dispatch_bytes, moe_combine_bytes;
    /* the backward's: the combine's gradient (sent the dispatch way) and
     * the dispatch's (the combine way); < 0 when not given: as the
     * forward's dispatch and combine */
    double moe_dispatch_grad_bytes, moe_combine_grad_bytes;
    double moe_fwd_pre_time, moe_fwd_expert_time;
    double moe_bwd_pre_time, moe_bwd_expert_time;
    /* of params, the experts' on this rank: with ep > 1 (or etp unlike
     * tp) their gradients sync over the expert data-parallel group
     * (par/ep_sync.c), not with the dense ones over dp x cp */
    double moe_expert_params;
    /* the flex dispatcher's shares of each all-to-all's bytes per NVLink
     * peer and per same-index RDMA peer (par/pass.h par_moe); 0: none */
    double moe_flex_nvl_share, moe_flex_rdma_share;
} pipe_layer;

/* Sets l to a layer with every optional field "not given" (< 0, the
 * defaults pipe_layer's comments name) and every figure 0: what a layer
 * table that sets nothing reads as (bind/run.c's defaults), for callers in
 * C that then set what they have. */
void pipe_layer_init(pipe_layer *l);

/* A step run for real (step/pipe_live.c, issue 25): the programs on one
 * process per rank over TCP, each compute op the MLP of live/mlp.h. */
typedef struct pipe_live {
    int iterations, warmup;
    double watchdog;      /* live_cfg.watchdog; 0: the default */
    const int32_t *width; /* the MLP's widths, nlayers + 1 */
    int32_t nwidth;
    uint64_t seed;
    int32_t rows; /* samples per microbatch */
    /* out */
    double simulated;  /* the simulated twin's makespan */
    double grad_error; /* max |g - g_full| / max |g_full| */
    double *held_peak; /* per entry of pipe_result: peak bytes of stashed
                          activations, measured */
    double *recompute; /* per entry: seconds of R ops, measured */
    live_result run;
    coll_move_log moves; /* the gradient sync's messages (dp > 1) */
} pipe_live;

/* Frees what a run left in pl; harmless twice. */
void pipe_live_free(pipe_live *pl);

typedef struct pipe_config {
    const char *name;
    enum sched_kind schedule;
    const char *schedule_name; /* as recorded ("gpipe", "custom", ...) */
    int32_t p, v, m;
    int checkpoint;
    int split_backward; /* built-in schedules: W right after each B */
    enum sched_placement placement; /* model stage <-> (rank, chunk) */
    const int32_t *place; /* an explicit chunk_placement (sched_spec.place) */
    int pytorch_p2p;      /* p2p = "pytorch": sched_spec.pytorch_p2p */
    double overlap_fb, fb_interference; /* sched_spec's FB timing */
    int fb_given;
    enum eng_p2p p2p;
    enum rec_level record;
    const pipe_layer *layers;
    int32_t nlayers;
    const int32_t *partition; /* p * v layer counts, by model stage */
    int32_t dp;               /* data-parallel replicas, >= 1 */
    /* tensor-parallel size: the layout's TP groups (lua/pipesim/
     * parallel.lua has lowered the layers for one TP rank), sequence
     * parallelism and the recompute mode (recorded) */
    int32_t tp;
    /* context-parallel size (the layout's CP groups: parallel.lua and
     * lua/pipesim/cp.lua have lowered the layers for one CP rank, its KV
     * exchange on the compute stream; the gradient sync spans dp x cp) */
    int32_t cp;
    /* expert parallelism (par/ep.h): ep ranks per expert-parallel group,
     * etp the experts' tensor parallelism (0: tp, Megatron's default),
     * and the share of SMs an overlapped all-to-all takes from the
     * compute beside it (DeepSeek-V3: 20 of H800's 132); ep_overlap:
     * Megatron's overlap_moe_expert_parallel_comm (par/ep.h) */
    int32_t ep, etp;
    double ep_comm_share;
    int ep_overlap;
    int sequence_parallel;
    const char *recompute;
    /* the rank order (par/layout.h), and an explicit list of tp x cp x dp
     * x p cluster ranks in the list order of par/layout.h (TP rank
     * innermost, then context, stage, replica) or NULL */
    enum par_order order;
    const int32_t *ranks;
    /* per cluster rank: peak FLOP/s * efficiency, and capacity in bytes (0:
     * unknown) */
    const double *device_rate;
    const double *device_memory;
    double weight_bytes, grad_bytes, optimizer_bytes; /* per parameter */
    /* gradient sync between replicas (par/dp.h); used when dp > 1 */
    double bucket_bytes, first_bucket_bytes;
    int grad_bucketed;        /* enum par_bucketed: which chunks are cut */
    int grad_algorithm;       /* enum coll_algo or COLL_AUTO */
    unsigned grad_candidates; /* for COLL_AUTO, 0: NCCL's (coll/coll.h) */
    int grad_protocol;        /* enum coll_proto, COLL_PROTO_AUTO or
                                 PAR_PROTOCOL_DEFAULT (par/pass.h) */
    int overlap;              /* start buckets as the backward makes them */
    int zero;                 /* ZeRO stage 0..3 (enum par_shard) */
    int32_t shard_group;      /* ranks one shard spans (hybrid sharding);
                                 0: the whole data-parallel group */
    int32_t reshard;          /* ZeRO-3's reshard_after_forward: 0 the
                                 shard group (true), 1 false, else ranks */
    int overlap_param_gather; /* zero's all-gather beside the forward */
    int param_gather_start;   /* enum par_pg_start: when it goes out */
    /* the cluster's GPUs per node (0 or 1: unknown): a data-parallel group
     * with the same number of GPUs on each of its nodes gets node-aware
     * collectives (ring channels, hierarchical; coll_ranks_per_node) */
    int32_t gpus_per_node;
    coll_hw hw; /* the cluster's NCCL hardware: NVLS, caps (coll/coll.h) */
    /* an identity of the network that no other network of the process
     * shares (a freed one's address may be reused), for the layout's
     * caches across a sweep's runs; 0: unknown, nothing cached */
    uint64_t net_id;
    double optimizer_seconds; /* optimizer step of a rank's parameters */
    const sched_action *const *custom; /* SCHED_CUSTOM orders per rank */
    const int32_t *ncustom;
    const char *params_json;  /* recorded as run.params, may be NULL */
    rec_meta meta;            /* run.sweep, point, tags, model ... */
    const fault_plan *faults; /* sim/fault.h; NULL: none */
    int fold;        /* replica folding (par/fold.h): 1 (default) where exact, 0
                        never (ps.run's fold = false) */
    pipe_live *live; /* NULL: simulate; else run it for real and
                        record it with backend 'tcp' */
} pipe_config;

typedef struct pipe_result {
    int64_t id; /* run id in the database, 0 if none */
    double makespan;
    double bubble;             /* mean over the run's ranks */
    double closed_form_bubble; /* NAN unless uniform and free communication */
    double imbalance;          /* slowest stage time / mean stage time */
    /* One entry per simulated rank (n = p x the instances of
     * par/sim.h: dp, times tp where the TP ranks are not simulated once),
     * index i * p + r for pipeline rank r of instance i; owned by the
     * pipe_ctx. */
    int32_t n;
    int32_t *rank; /* cluster rank */
    /* the cluster ranks simulated rank k stands for: member[k * per ..
     * (k + 1) * per), its own first (its TP group when TP is simulated
     * once, else itself) */
    int32_t per;
    const int32_t *member;
    int32_t ninstances;   /* n / p: copies of the pipeline simulated */
    int32_t tp_unfolded;  /* 1 when a rank stands for its TP group, else tp
                             (instance i is TP rank i % tp of replica i / tp) */
    double *stage_bubble; /* idle fraction */
    double *peak_memory;  /* bytes */
    double *t_peak;
    double *static_memory;
    double *exposed_comm; /* seconds waiting on gradient sync (0 if none) */
    double *exposed_a2a;  /* seconds waiting on expert all-to-alls */
    double *exposed_a2a_pairs; /* of which at overlapped F&B pairs' ends */
    double *capacity;          /* device memory in bytes, 0: unknown */
    /* YES when every entry's peak is within a known capacity, NO when
     * one exceeds its capacity, else UNKNOWN; nover entries exceed */
    enum rec_fits fits;
    int32_t nover;
    int folded; /* 1 when the engine ran representatives of identical
                   replicas only (par/fold.h) */
    eng_result eng;
} pipe_result;

/* The context of pipe_run (step/pipe.h), opaque to its callers; its
 * members in step/pipe_ctx.h. */
typedef struct pipe_ctx pipe_ctx;

/* Pipeline rank of model stage s under the run's chunk placement. */
static inline int32_t pipe_stage_rank(const pipe_config *cfg, int32_t s)
{
    return sched_place_rank(cfg->placement, cfg->place, cfg->p, s);
}

#endif
