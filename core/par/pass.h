/* One lowering pass per parallel dimension. A training step's programs are
 * built by running the passes of par_passes in order over one par_step:
 * each adds its dimension's communication (lanes, collectives, waits) and
 * its memory to the per-rank programs; its compute split is already in the
 * stage costs (the roofline in lua/pipesim/ divides the work, the C core
 * places it).
 *
 *   pp    the pipeline schedule of every instance (par/pp.c)
 *   tied  the tied embedding's gradient all-reduce between the first and
 *         last pipeline stage, Megatron's embedding group (par/tied.c)
 *   ep    each MoE layer's dispatch and combine all-to-alls inside its
 *         expert-parallel group, in place or beside an overlapped F&B
 *         (par/ep.c; its lanes added by ep_comm after dp)
 *   dp    the gradient sync over each data-parallel group, the reductions
 *         other passes asked for at its end (finalize_model_grads), the
 *         optimizer step, ZeRO's sharding (par/dp.c)
 *
 * Tensor parallelism has no pass here: its collectives sit on the compute
 * stream inside the stage costs (lua/pipesim/parallel.lua costs them on
 * the layout's TP group), and whether its ranks are simulated once is the
 * layout's fold rule (par/links.h, par/sim.h). A new dimension is a new
 * pass: its options in par_step, its file with its par_pass, one line in
 * par/passes.c's list (core/README.md, "Adding a dimension").
 *
 * Lanes: compute lane k = i p + r is simulated rank k (instance i's
 * pipeline rank r, par/sim.h), added by the pp pass before any other. */
#ifndef PS_PAR_PASS_H
#define PS_PAR_PASS_H

#include <stdint.h>

#include "base/err.h"
#include "coll/coll.h"
#include "net/net.h"
#include "par/layout.h"
#include "par/sim.h"
#include "sched/sched.h"
#include "sim/prog.h"

/* One collective a pass appended, for the run's `collective` table: what
 * ran (auto's algorithm and protocol) and where its ops are: ops lo[j] ..
 * hi[j] - 1 of lane lanes[j] for its j-th rank. */
typedef struct par_coll {
    int op, algorithm, protocol; /* enum coll_op, coll_algo, coll_proto */
    int32_t d;                   /* ranks taking part */
    double bytes;
    int32_t *lanes, *lo, *hi; /* d each, one block owned by the log */
} par_coll;

typedef struct par_log {
    par_coll *c;
    int32_t n, cap;
} par_log;

/* A reduction the dp pass runs at the end of the gradient sync, before
 * the optimizer step, as Megatron's finalize_model_grads does after
 * finish_grad_sync: an all-reduce of `bytes` between pipeline ranks r0 and
 * r1 of every instance (the tied embedding's, par/tied.c). */
typedef struct par_finalize {
    int32_t r0, r1;
    double bytes;
} par_finalize;

#define PAR_MAX_FINALIZE 4

/* The protocol of a collective the user named none for (par_protocol). */
#define PAR_PROTOCOL_DEFAULT (-2)

/* The data-parallel gradient sync's settings (par/dp.c; step/pipe.h's
 * fields of the same names). */
typedef struct par_dp_opts {
    double bucket_bytes, first_bucket_bytes;
    int bucketed;        /* enum par_bucketed (par/dp.h) */
    int algorithm;       /* enum coll_algo or COLL_AUTO */
    unsigned candidates; /* for COLL_AUTO, as in coll_spec */
    int protocol;        /* enum coll_proto, COLL_PROTO_AUTO or
                            PAR_PROTOCOL_DEFAULT */
    int overlap;
    int overlap_param_gather;
    int param_gather_start; /* enum par_pg_start (par/dp.h) */
    /* ZeRO-3: the ranks a unit's parameters stay sharded over between its
     * forward and its backward (FSDP2's reshard_after_forward): 0 the
     * whole shard group (true), 1 none (false: no all-gather before the
     * backward), else a divisor of it (an int) */
    int32_t reshard;
    double optimizer_seconds; /* OPT op of a rank holding all its params */
} par_dp_opts;

/* A MoE layer's figures for the ep pass (par/ep.h), per microbatch on
 * one rank (the most loaded of its expert-parallel group): the bytes the
 * rank sends in all to the other ep - 1 ranks in the forward's dispatch
 * and combine, and the seconds of its forward before the dispatch
 * (attention, shared experts, router, permute) and between dispatch and
 * combine (the local experts), of its backward before the combine's
 * gradient and between it and the dispatch's gradient; the backward's
 * all-to-alls: the combine's gradient, sent the dispatch way, then the
 * dispatch's, sent the combine way. A layer without
 * bytes is not a MoE layer. Its expert parameters sync over the expert
 * data-parallel group (par/ep_sync.c), not in the dp pass's buckets. */
typedef struct par_moe {
    double dispatch_bytes, combine_bytes;
    double dispatch_grad_bytes, combine_grad_bytes; /* the backward's */
    double fwd_pre, fwd_expert, bwd_pre, bwd_expert;
    double expert_params; /* of the layer's parameters, the experts' */
    /* the flex dispatcher (DeepEP's normal kernels, par/ep.c): of each
     * all-to-all's bytes, the share a rank sends to each peer on its node
     * (NVLink, its own tokens and those it forwards) and to each peer of
     * the same local index on another node (RDMA); none to the others.
     * Both 0: an all-to-all, even over the peers */
    double flex_nvl, flex_rdma;
} par_moe;

/* What the ep pass keeps between its two entries (par/ep.h): the ops of
 * each compute lane's communication lane, and where they went. Owned by
 * the step's owner (step/pipe.c), reused across runs. */
typedef struct par_ep_state {
    prog_set *stash; /* lane k: compute lane k's all-to-all lane's ops */
    int32_t *comm;   /* per compute lane: its all-to-all lane, or -1 */
    int32_t cap;
} par_ep_state;

/* Expert parallelism's settings (par/ep.h; step/pipe.h's fields). */
typedef struct par_ep_opts {
    const par_moe *layers;   /* per layer, or NULL: no MoE layer */
    const double *layer_fwd; /* per layer: forward seconds (instance 0) */
    double comm_share;       /* SMs' share the overlapped all-to-alls take */
    int overlap; /* Megatron's combined 1F1B: steady-state F/B pairs (ep.h) */
    par_ep_state *state;
    double *exposed;       /* n p: seconds each compute lane waited on them */
    double *exposed_pairs; /* n p: of which at overlapped F&B pairs' ends */
} par_ep_opts;

/* Replica folding's streaming check (par/fold.h): while the passes lower,
 * the ops of every replica but the representatives are compared with
 * theirs and dropped. par_append_coll calls flush after each collective,
 * failing when it returns 1 (the replicas differ: the caller lowers again
 * without the hook), and logs a lane's ops at their index counting those
 * dropped before. */
typedef struct par_fold_hook {
    int (*flush)(void *arg, prog_set *ps);
    int32_t (*dropped)(const void *arg, int32_t lane);
    void *arg;
} par_fold_hook;

/* Everything the passes share: the layout, the simulated ranks, the
 * programs and the model's stage and layer tables. Filled by step/pipe.c. */
typedef struct par_step {
    const par_layout *layout;
    const par_sim *sim;
    prog_set *ps;
    const net *nw;
    int32_t gpus_per_node; /* of the cluster, 0 or 1 unknown */
    coll_hw hw;            /* the cluster's NCCL hardware */
    /* the pipeline: the schedule (its stages and rank_of are set per
     * instance by the pp pass), chunks per rank v (sched_chunks: two for
     * DualPipe's copies), model stages (p x virtual stages), stage costs
     * of every instance (instance i's at i nstages) */
    sched_spec sched;
    int32_t v, nstages;
    const sched_stage *stages;
    /* per model stage s (nstages): its layers first[s] .. first[s] +
     * count[s] - 1, and per layer its parameters, backward seconds and
     * parameters shared with the first layer (a tied head's) */
    const int32_t *first, *count;
    const double *layer_params, *layer_bwd, *layer_shared;
    const double *stage_params; /* nstages: each stage's parameters */
    /* per layer: static bytes beyond its parameters x the per-parameter
     * bytes (FP8 weight copies; pipe_layer.static_bytes) */
    const double *layer_static;
    /* per layer: bytes held only while it computes (pipe_layer.work_bytes;
     * the pp pass charges each rank the largest of its layers') */
    const double *layer_work;
    double weight_bytes, grad_bytes, optimizer_bytes; /* per parameter */
    par_dp_opts dp;
    par_ep_opts ep;
    /* filled by the passes as they run */
    par_finalize finalize[PAR_MAX_FINALIZE];
    int32_t nfinalize;
    par_log *log; /* the collectives appended, or NULL */
    /* live mode (step/pipe_live.c): where the collectives note what each
     * message moves, or NULL; with it they run without NCCL's protocols
     * (TCP has none) */
    coll_move_log *moves;
    const par_fold_hook *fold; /* or NULL: every op is kept */
} par_step;

typedef struct par_pass {
    const char *name;
    /* before anything is lowered: settles what the pass will add (it may
     * ask the dp pass for a finalize reduction); NULL: nothing to settle */
    int (*plan)(par_step *st, ps_err *err);
    /* 1 when the pass adds communication, so that the step's programs
     * must be arrays (a step where no pass but pp adds any may run as
     * generated lanes, sched/gen_pipe.h); NULL: never */
    int (*arrays)(const par_step *st);
    /* adds the pass's ops and lanes to st->ps; fails naming the setting */
    int (*lower)(par_step *st, ps_err *err);
    /* adds each cluster rank's static bytes (weights, gradients, optimizer
     * state) to rank_static; NULL: none */
    void (*memory)(const par_step *st, double *rank_static);
    /* after the engine ran: adds the seconds each compute lane waited on
     * the pass's communication to exposed (n p entries), turning a lane's
     * NAN (nothing to wait on) into a figure; NULL: none */
    void (*exposed)(const par_step *st, double *exposed);
} par_pass;

/* The passes in the order they lower, NULL-terminated. */
extern const par_pass *const par_passes[];

/* Runs every pass's plan in order; stops at the first failure. */
int par_plan(par_step *st, ps_err *err);

/* 1 when some pass needs the step's programs as arrays. */
int par_arrays(const par_step *st);

/* Runs every pass's lower in order; stops at the first failure. */
int par_lower(par_step *st, ps_err *err);

/* rank_static (by cluster rank, zeroed by the caller) from every pass's
 * memory. */
void par_memory(const par_step *st, double *rank_static);

/* exposed (n p entries): NAN, then every pass's exposed. A lane left NAN
 * had no communication to wait on. */
void par_exposed(const par_step *st, double *exposed);

/* The log: emptied (its array kept) and freed; the first start and last
 * end of collective k's ops after the engine ran ps. */
void par_log_clear(par_log *log);
void par_log_free(par_log *log);
void par_log_span(const par_log *log, const prog_set *ps, int32_t k, double *t0,
                  double *t1);

/* Appends collective spec on lanes (one per listed rank) through
 * coll_append, tagging its ops with tag and logging it in st->log. */
int par_append_coll(par_step *st, coll_forks *forks, const coll_spec *spec,
                    const int32_t *lanes, int32_t tag, ps_err *err);

/* The protocol of collective spec (its op, algorithm and candidates set):
 * asked, or when that is PAR_PROTOCOL_DEFAULT the one rule for every
 * collective of a step and of ps.collective (coll_default_protocol):
 * NCCL's own choice (auto) on a cluster whose devices carry NCCL's
 * constants, none on textbook links and for algorithms without
 * protocols. */
int par_protocol(const par_step *st, const coll_spec *spec, int asked);

#endif
