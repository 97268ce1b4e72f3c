/* Pipeline step: stage costs (step/pipe_cost.c) -> programs -> engine ->
 * statistics -> record. Everything per run is O(ops); buffers live in the
 * pipe_ctx and grow geometrically, so a sweep of small runs allocates
 * almost nothing. */
#include "step/pipe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"
#include "coll/coll.h"
#include "sched/gen_pipe.h"
#include "sim/mem.h"
#include "step/dp.h"
#include "step/pipe_impl.h"

struct pipe_ctx {
    eng_sim *eng;
    prog_set *ps;
    /* per run buffers */
    sched_stage *stages;
    rec_stage *stage_rows;
    int32_t stages_cap;
    double *stage_bubble, *peak, *t_peak, *static_mem, *busy, *exposed,
        *capacity;
    int32_t *ranks;
    rec_rank *rank_rows;
    /* per layer, for the gradient buckets */
    double *layer_params, *layer_bwd;
    int32_t *stage_first, *stage_count;
    int32_t layers_cap;
    int32_t ranks_cap;
    double *rank_static; /* by cluster rank */
    mem_rank *ledger;    /* by cluster rank */
    int32_t cluster_cap;
    dp_log grad_log; /* the gradient-sync collectives of the last run */
};

pipe_ctx *pipe_ctx_new(void)
{
    pipe_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return NULL;
    ctx->eng = eng_new();
    ctx->ps = prog_new(1);
    if (!ctx->eng || !ctx->ps) {
        pipe_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

void pipe_ctx_free(pipe_ctx *ctx)
{
    if (!ctx)
        return;
    eng_free(ctx->eng);
    prog_free(ctx->ps);
    dp_log_free(&ctx->grad_log);
    free(ctx->stages);
    free(ctx->stage_rows);
    free(ctx->stage_bubble);
    free(ctx->peak);
    free(ctx->t_peak);
    free(ctx->static_mem);
    free(ctx->busy);
    free(ctx->exposed);
    free(ctx->capacity);
    free(ctx->ranks);
    free(ctx->rank_rows);
    free(ctx->layer_params);
    free(ctx->layer_bwd);
    free(ctx->stage_first);
    free(ctx->stage_count);
    free(ctx->rank_static);
    free(ctx->ledger);
    free(ctx);
}

void pipe_config_init(pipe_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->schedule = SCHED_1F1B;
    cfg->p = cfg->v = cfg->m = cfg->dp = cfg->tp = 1;
    cfg->p2p = ENG_RENDEZVOUS;
    cfg->record = REC_EVENTS;
    cfg->placement = sched_default_placement(SCHED_1F1B);
    cfg->weight_bytes = 2;
    cfg->grad_bytes = 2;
    cfg->optimizer_bytes = 12;
    cfg->bucket_bytes = 25.0 * 1024 * 1024;
    cfg->first_bucket_bytes = 1.0 * 1024 * 1024;
    cfg->grad_algorithm = COLL_AUTO;
    cfg->overlap = 1;
}

void pipe_layer_init(pipe_layer *l)
{
    *l = (pipe_layer){
        .fwd_flops = -1,
        .bwd_flops = -1,
        .fwd_time = -1,
        .bwd_time = -1,
        .in_bytes = -1,
        .bwd_input_flops = -1,
        .bwd_weight_flops = -1,
        .bwd_input_time = -1,
        .bwd_weight_time = -1,
        .bwd_weight_bytes = -1,
        .recompute_time = -1,
        .kept_bytes = -1,
        .tp_comm_time = -1,
        .tp_exposed_time = -1,
    };
}

int pipe_parse_order(const char *name, enum pipe_order *order, ps_err *err)
{
    if (strcmp(name, "dp_inner") == 0)
        *order = PIPE_DP_INNER;
    else if (strcmp(name, "pp_inner") == 0)
        *order = PIPE_PP_INNER;
    else
        return ps_errf(err,
                       "unknown placement '%s' (expected dp_inner or "
                       "pp_inner)",
                       name);
    return PS_OK;
}

void pipe_place(enum pipe_order order, int32_t p, int32_t dp, int32_t *rank_of)
{
    for (int32_t j = 0; j < dp; j++)
        for (int32_t r = 0; r < p; r++)
            rank_of[j * p + r] =
                order == PIPE_PP_INNER ? j * p + r : r * dp + j;
}

/* ranks_per_node of the data-parallel groups (the replicas of one pipeline
 * rank) when every group has the same, by coll_ranks_per_node's rule:
 * gpus_per_node for whole nodes, k for k GPUs of each group on each node
 * (tensor parallelism strides a group over a node); else 0. */
static int32_t group_ranks_per_node(const pipe_config *cfg)
{
    if (cfg->gpus_per_node < 2 || cfg->dp < 2)
        return 0;
    int32_t *group = malloc((size_t)cfg->dp * sizeof *group);
    if (!group)
        return 0; /* one ring per group: the conservative model */
    int32_t rpn = -1;
    for (int32_t r = 0; r < cfg->p && rpn != 0; r++) {
        for (int32_t j = 0; j < cfg->dp; j++) {
            int32_t k = j * cfg->p + r;
            group[j] = cfg->rank_of ? cfg->rank_of[k] : k;
        }
        int32_t g = coll_ranks_per_node(cfg->gpus_per_node, group, cfg->dp);
        rpn = rpn < 0 || rpn == g ? g : 0;
    }
    free(group);
    return rpn < 0 ? 0 : rpn;
}

double pipe_closed_form_bubble(enum sched_kind kind, int32_t p, int32_t v,
                               int32_t m)
{
    switch (kind) {
    case SCHED_GPIPE:
    case SCHED_1F1B:
    /* inference: each rank idles (p-1)F of (m+p-1)F */
    case SCHED_FORWARD_ONLY: return (double)(p - 1) / (double)(m + p - 1);
    case SCHED_INTERLEAVED: return (double)(p - 1) / ((double)v * m + p - 1);
    default: return NAN;
    }
}

double pipe_closed_form_split(enum sched_kind kind, int32_t p, int32_t m,
                              double f, double b, double w)
{
    /* Where the forms hold was checked against the simulated schedules
     * (tests/unit/test_sched.c, test_zb_closed_form): H1 needs W no
     * longer than F and B (the paper's W fills the warm-up gaps F + B - W
     * long) and m >= p; H2 equal costs and m >= 2p (its warm-up holds 2p
     * forwards). Elsewhere the schedule is valid but the form is not. */
    double idle;
    switch (kind) {
    case SCHED_1F1B: idle = (p - 1) * (f + b); break;
    case SCHED_ZB_H1:
        if (m < p || w > f || w > b)
            return NAN;
        idle = (p - 1) * (f + b - w);
        break;
    case SCHED_ZB_H2:
        if (m < 2 * p || f != b || b != w)
            return NAN;
        idle = (p - 1) * f;
        break;
    default: return NAN;
    }
    double busy = m * (f + b + w);
    return busy + idle > 0 ? idle / (busy + idle) : NAN;
}

double pipe_closed_form_dual(enum sched_kind kind, int32_t p, int32_t m,
                             double f, double b, double w)
{
    /* DeepSeek-V3 technical report (arXiv:2412.19437), section 3.2.1,
     * Table 2, which github.com/deepseek-ai/DualPipe's README repeats:
     * the bubble of DualPipe is (PP/2 - 1)(F&B + B - 3W), PP pipeline
     * stages, F a forward chunk, B a full backward chunk, W its weight
     * part, F&B an overlapped forward and backward. DualPipe on p ranks has
     * PP = p; DualPipeV, DualPipe "cut in half", holds PP = 2p stages on p
     * ranks. Here B = b + w and F&B = F + B, pipesim's F&B when nothing
     * says it hides time (sched/sched.h): every rank is then busy m (f + b + w)
     * (DualPipe: m/2 microbatches each way through its two chunks) or
     * 2m (f + b + w) (DualPipeV: all m through both), so every rank idles
     * the same and the mean fraction is the table's idle over busy + idle.
     * The form is exact with f = b = w and m >= 2p (tests/unit/test_ds.c,
     * test_pipe.c); with unequal parts it bounds the worst rank only. */
    double busy, pp;
    switch (kind) {
    case SCHED_DUALPIPE:
        busy = m * (f + b + w);
        pp = p;
        break;
    case SCHED_DUALPIPEV:
        busy = 2.0 * m * (f + b + w);
        pp = 2.0 * p;
        break;
    default: return NAN;
    }
    if (m < 2 * p || f != b || b != w)
        return NAN;
    double idle = (pp / 2 - 1) * ((f + b + w) + (b + w) - 3 * w);
    return busy + idle > 0 ? idle / (busy + idle) : NAN;
}

static int grow(void **p, size_t n, size_t sz)
{
    void *q = realloc(*p, (n + 1) * sz);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

static int size_buffers(pipe_ctx *ctx, int32_t nstages, int32_t p,
                        int32_t nranks, int32_t nlayers)
{
    if (nstages > ctx->stages_cap) {
        if (grow((void **)&ctx->stages, (size_t)nstages, sizeof *ctx->stages) ||
            grow((void **)&ctx->stage_rows, (size_t)nstages,
                 sizeof *ctx->stage_rows) ||
            grow((void **)&ctx->stage_first, (size_t)nstages,
                 sizeof(int32_t)) ||
            grow((void **)&ctx->stage_count, (size_t)nstages, sizeof(int32_t)))
            return -1;
        ctx->stages_cap = nstages;
    }
    if (nlayers > ctx->layers_cap) {
        if (grow((void **)&ctx->layer_params, (size_t)nlayers,
                 sizeof(double)) ||
            grow((void **)&ctx->layer_bwd, (size_t)nlayers, sizeof(double)))
            return -1;
        ctx->layers_cap = nlayers;
    }
    if (p > ctx->ranks_cap) {
        if (grow((void **)&ctx->stage_bubble, (size_t)p, sizeof(double)) ||
            grow((void **)&ctx->peak, (size_t)p, sizeof(double)) ||
            grow((void **)&ctx->t_peak, (size_t)p, sizeof(double)) ||
            grow((void **)&ctx->static_mem, (size_t)p, sizeof(double)) ||
            grow((void **)&ctx->busy, (size_t)p, sizeof(double)) ||
            grow((void **)&ctx->exposed, (size_t)p, sizeof(double)) ||
            grow((void **)&ctx->capacity, (size_t)p, sizeof(double)) ||
            grow((void **)&ctx->ranks, (size_t)p, sizeof(int32_t)) ||
            grow((void **)&ctx->rank_rows, (size_t)p, sizeof *ctx->rank_rows))
            return -1;
        ctx->ranks_cap = p;
    }
    if (nranks > ctx->cluster_cap) {
        if (grow((void **)&ctx->rank_static, (size_t)nranks, sizeof(double)) ||
            grow((void **)&ctx->ledger, (size_t)nranks, sizeof *ctx->ledger))
            return -1;
        ctx->cluster_cap = nranks;
    }
    return 0;
}

/* Stage times equal within this relative difference count as uniform: the
 * sums of a partition's layer times differ in their last bits. */
#define UNIFORM_REL_TOL 1e-12

/* Uniform: every stage the same forward and backward time and every stage
 * boundary free (zero bytes over zero latency or infinite bandwidth). */
static int is_uniform(const pipe_ctx *ctx, const pipe_config *cfg,
                      const net *nw)
{
    int32_t nstages = cfg->p * cfg->v;
    const sched_stage *s0 = &ctx->stages[0];
    for (int32_t s = 0; s < nstages * cfg->dp; s++) { /* every replica */
        const sched_stage *x = &ctx->stages[s];
        if (fabs(x->fwd - s0->fwd) > UNIFORM_REL_TOL * s0->fwd ||
            fabs(x->bwd - s0->bwd) > UNIFORM_REL_TOL * s0->bwd ||
            fabs(x->wgt - s0->wgt) > UNIFORM_REL_TOL * s0->wgt)
            return 0;
    }
    for (int32_t s = 0; s < nstages; s++) {
        const sched_stage *st = &ctx->stages[s];
        for (int32_t j = 0; s + 1 < nstages && j < cfg->dp; j++) {
            int32_t a = pipe_cluster_rank(cfg, pipe_stage_rank(cfg, s), j);
            int32_t b = pipe_cluster_rank(cfg, pipe_stage_rank(cfg, s + 1), j);
            if (a != b && (net_lone_time(nw, a, b, st->out_bytes) > 0 ||
                           net_lone_time(nw, b, a, st->out_bytes) > 0))
                return 0;
        }
    }
    /* gradient sync and the optimizer step are outside the closed form
     * unless they cost nothing */
    if (cfg->optimizer_seconds > 0)
        return 0;
    for (int32_t j = 1; j < cfg->dp; j++)
        for (int32_t r = 0; r < cfg->p; r++)
            if (net_lone_time(nw, pipe_cluster_rank(cfg, r, 0),
                              pipe_cluster_rank(cfg, r, j), 4) > 0)
                return 0;
    return 1;
}

static void fill_stats(pipe_ctx *ctx, const pipe_config *cfg,
                       const dp_config *dc, pipe_result *res)
{
    int32_t n = cfg->p * cfg->dp;
    /* compute lanes come first, one per rank, index j * p + r; the
     * engine summed their compute time as the ops ended */
    eng_stats es;
    eng_stats_of(ctx->eng, &es);
    for (int32_t l = 0; l < n; l++)
        ctx->busy[l] = es.busy[l];
    for (int32_t l = 0; cfg->live && l < n; l++) { /* measured */
        const prog_lane *lane = &ctx->ps->lanes[l];
        ctx->busy[l] = 0;
        for (int32_t i = 0; i < lane->n; i++)
            if (lane->ops[i].type == PROG_COMPUTE)
                ctx->busy[l] += lane->ops[i].t_end - lane->ops[i].t_start;
    }
    int synced = cfg->dp > 1;
    if (synced)
        dp_exposed(dc, ctx->ps, ctx->exposed);
    double sum = 0, makespan = res->eng.makespan;
    int unknown = 0;
    res->nover = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t cr = pipe_cluster_rank(cfg, k % cfg->p, k / cfg->p);
        double b = makespan > 0 ? (makespan - ctx->busy[k]) / makespan : 0;
        ctx->ranks[k] = cr;
        ctx->stage_bubble[k] = b;
        sum += b;
        ctx->peak[k] = ctx->ledger[cr].peak;
        ctx->t_peak[k] = ctx->ledger[cr].t_peak;
        ctx->static_mem[k] = ctx->ledger[cr].static_bytes;
        double exposed = synced ? ctx->exposed[k] : NAN;
        if (!synced)
            ctx->exposed[k] = 0;
        /* a device without a memory figure gives no verdict, not "fits" */
        double cap = cfg->device_memory ? cfg->device_memory[cr] : 0;
        enum rec_fits fits = !(cap > 0)            ? REC_FITS_UNKNOWN
                             : ctx->peak[k] <= cap ? REC_FITS_YES
                                                   : REC_FITS_NO;
        ctx->capacity[k] = cap > 0 ? cap : 0;
        unknown |= fits == REC_FITS_UNKNOWN;
        res->nover += fits == REC_FITS_NO;
        ctx->rank_rows[k] = (rec_rank){cr,
                                       ctx->busy[k],
                                       b,
                                       ctx->static_mem[k],
                                       ctx->peak[k],
                                       ctx->t_peak[k],
                                       exposed,
                                       cap,
                                       fits,
                                       0,
                                       0};
        /* TP collectives of the rank's chunks, every microbatch */
        for (int32_t c = 0; c < sched_chunks(cfg->schedule, cfg->v); c++) {
            const rec_stage *row = &ctx->stage_rows[sched_place_stage(
                cfg->placement, cfg->place, cfg->p,
                sched_chunks(cfg->schedule, cfg->v), c, k % cfg->p)];
            ctx->rank_rows[k].tp_comm += cfg->m * row->tp_comm;
            ctx->rank_rows[k].tp_exposed += cfg->m * row->tp_exposed;
        }
    }
    res->fits = res->nover > 0 ? REC_FITS_NO
                : unknown      ? REC_FITS_UNKNOWN
                               : REC_FITS_YES;
    /* per stage: the longest wait over the replicas of its rank */
    for (int32_t s = 0; synced && s < cfg->p * cfg->v; s++) {
        double worst = 0;
        for (int32_t j = 0; j < cfg->dp; j++)
            worst =
                fmax(worst, ctx->exposed[j * cfg->p + pipe_stage_rank(cfg, s)]);
        ctx->stage_rows[s].exposed_comm = worst;
    }
    res->makespan = makespan;
    res->bubble = sum / n;
    res->n = n;
    res->rank = ctx->ranks;
    res->stage_bubble = ctx->stage_bubble;
    res->peak_memory = ctx->peak;
    res->t_peak = ctx->t_peak;
    res->static_memory = ctx->static_mem;
    res->exposed_comm = ctx->exposed;
    res->capacity = ctx->capacity;
}

/* Writes the run; error != NULL records it as failed (summary level, no
 * rank rows; stage rows only when with_stages). */
static int record(pipe_ctx *ctx, const pipe_config *cfg, const net *nw,
                  rec_db *db, pipe_result *res, const char *error,
                  int with_stages, ps_err *err)
{
    double max_peak = 0;
    for (int32_t k = 0; k < res->n && !error; k++)
        if (res->peak_memory[k] > max_peak)
            max_peak = res->peak_memory[k];
    /* schedules with W and PyTorch's post their transfers as PyTorch's
     * runtime does whatever the mode (sched/sched.h) */
    sched_spec how = {.kind = cfg->schedule,
                      .p = cfg->p,
                      .custom = cfg->custom,
                      .ncustom = cfg->ncustom,
                      .split = cfg->split_backward,
                      .pytorch_p2p = cfg->pytorch_p2p};
    int async = sched_async(&how);
    rec_run run = {
        .kind = "pipeline",
        .name = cfg->name,
        .schedule = cfg->schedule_name,
        .p2p = cfg->p2p == ENG_EAGER ? "eager"
               : async               ? "pytorch"
                                     : "rendezvous",
        .stages = cfg->p,
        .microbatches = cfg->m,
        .virtual_stages = cfg->v,
        .dp = cfg->dp,
        .tp = cfg->tp > 0 ? cfg->tp : 1,
        .sequence_parallel = cfg->sequence_parallel,
        .recompute = cfg->recompute    ? cfg->recompute
                     : cfg->checkpoint ? "full"
                                       : "none",
        .makespan = error ? NAN : res->makespan,
        .bubble = error ? NAN : res->bubble,
        .closed_form_bubble = error ? NAN : res->closed_form_bubble,
        .imbalance = res->imbalance,
        .peak_memory = error ? NAN : max_peak,
        .params_json = cfg->params_json,
        .status = error ? "failed" : "ok",
        .error = error,
        .fits = error ? REC_FITS_UNKNOWN : res->fits,
        .meta = cfg->meta,
        .backend = cfg->live ? "tcp" : NULL,
        .simulated = cfg->live && !error ? cfg->live->simulated : NAN,
    };
    /* one collective row per gradient-sync bucket and pipeline rank, with
     * the algorithm and protocol auto chose (rec/rec.h) */
    int32_t ncoll = error ? 0 : ctx->grad_log.n;
    rec_collective *coll = calloc((size_t)ncoll + 1, sizeof *coll);
    if (!coll)
        return ps_errf(err, "out of memory");
    for (int32_t k = 0; k < ncoll; k++) {
        const dp_coll *e = &ctx->grad_log.c[k];
        double t0, t1;
        dp_log_span(&ctx->grad_log, ctx->ps, k, &t0, &t1);
        double t = t1 - t0, algbw = t > 0 ? e->bytes / t : 0;
        coll[k] = (rec_collective){
            .op = coll_op_name((enum coll_op)e->op),
            .algorithm = coll_algo_name(e->algorithm),
            .ranks = e->d,
            .bytes = e->bytes,
            .time = t,
            .algbw = algbw,
            .busbw = algbw * coll_busbw_factor((enum coll_op)e->op, e->d),
            .protocol = coll_proto_name(e->protocol),
        };
    }
    rec_payload pl = {
        .run = &run,
        .collective = ncoll ? coll : NULL,
        .ncollectives = ncoll,
        .stages = ctx->stage_rows,
        .nstages = with_stages ? cfg->p * cfg->v : 0,
        .ranks = error ? NULL : ctx->rank_rows,
        .nranks = error ? 0 : res->n,
        .progs = ctx->ps,
        .static_memory = ctx->rank_static,
        .network = cfg->live ? NULL : nw, /* the twin's link loads */
    };
    int rc =
        rec_write(db, &pl, error ? REC_SUMMARY : cfg->record, &res->id, err);
    free(coll);
    return rc;
}

/* Everything of pipe_run but the recording. *built is set once the stage
 * rows are complete (a failed run records them when they are). */
static int simulate(pipe_ctx *ctx, const pipe_config *cfg, net *nw,
                    pipe_result *res, int *built, ps_err *err)
{
    res->closed_form_bubble = NAN;
    res->imbalance = NAN;
    int32_t nranks = net_ranks(nw), nstages = cfg->p * cfg->v;
    if (cfg->p < 1 || cfg->v < 1 || cfg->m < 1 || cfg->dp < 1)
        return ps_errf(err, "stages, virtual_stages, microbatches and dp must "
                            "be at least 1");
    if (cfg->schedule == SCHED_DUALPIPE && cfg->v != 1)
        return ps_errf(err,
                       "dualpipe schedule holds each of the %d stages twice "
                       "(two copies, not model chunks): leave virtual_stages "
                       "at 1 (got %d)",
                       (int)cfg->p, (int)cfg->v);
    int32_t n = cfg->p * cfg->dp;
    if (n > nranks)
        return ps_errf(err,
                       "dp %d x %d stages need %d ranks but the cluster has %d",
                       (int)cfg->dp, (int)cfg->p, (int)n, (int)nranks);
    for (int32_t k = 0; k < n; k++) {
        int32_t cr = pipe_cluster_rank(cfg, k % cfg->p, k / cfg->p);
        if (cr < 0 || cr >= nranks)
            return ps_errf(err,
                           "pipeline rank %d of replica %d maps to rank %d, "
                           "outside the cluster's %d ranks",
                           (int)(k % cfg->p), (int)(k / cfg->p), (int)cr,
                           (int)nranks);
    }
    /* stage buffers hold every replica's stage costs (pipe_stage_costs) */
    if ((int64_t)nstages * cfg->dp > INT32_MAX ||
        size_buffers(ctx, nstages * cfg->dp, n, nranks, cfg->nlayers))
        return ps_errf(err, "out of memory");
    pipe_costs costs = {ctx->stages,      ctx->stage_rows,   ctx->stage_first,
                        ctx->stage_count, ctx->layer_params, ctx->layer_bwd};
    if (pipe_stage_costs(cfg, &costs, err))
        return PS_ERR;
    *built = 1;

    /* static memory: weights, gradients, optimizer state of the rank's
     * parameters (ZeRO paper accounting, Rajbhandari et al. 2020: 2 + 2 + 12
     * bytes per parameter for bf16 mixed precision with Adam); ZeRO-1 keeps
     * 1/d of the optimizer state */
    int zero = cfg->zero && cfg->dp > 1;
    double per_param = cfg->weight_bytes + cfg->grad_bytes +
                       cfg->optimizer_bytes / (zero ? cfg->dp : 1);
    for (int32_t r = 0; r < nranks; r++)
        ctx->rank_static[r] = 0;
    double tmax = 0, tsum = 0;
    for (int32_t s = 0; s < nstages; s++) {
        /* and the layers' own static bytes (pipe_layer.static_bytes) */
        double stage_static = ctx->stage_rows[s].params * per_param;
        for (int32_t i = ctx->stage_first[s];
             i < ctx->stage_first[s] + ctx->stage_count[s]; i++)
            stage_static += cfg->layers[i].static_bytes;
        for (int32_t j = 0; j < cfg->dp; j++) {
            ctx->rank_static[pipe_cluster_rank(cfg, pipe_stage_rank(cfg, s),
                                               j)] += stage_static;
            /* DualPipe: the second copy, on rank p - 1 - s (2x params) */
            if (cfg->schedule == SCHED_DUALPIPE)
                ctx->rank_static[pipe_cluster_rank(cfg, cfg->p - 1 - s, j)] +=
                    stage_static;
        }
        double t = ctx->stages[s].fwd + ctx->stages[s].bwd + ctx->stages[s].wgt;
        tsum += t;
        if (t > tmax)
            tmax = t;
    }
    res->imbalance = tsum > 0 ? tmax / (tsum / nstages) : 1;

    sched_spec spec = {
        .kind = cfg->schedule,
        .p = cfg->p,
        .v = sched_chunks(cfg->schedule, cfg->v),
        .m = cfg->m,
        .checkpoint = cfg->checkpoint,
        .stages = ctx->stages,
        .custom = cfg->custom,
        .ncustom = cfg->ncustom,
        .split = cfg->split_backward,
        .placement = cfg->placement,
        .place = cfg->place,
        .pytorch_p2p = cfg->pytorch_p2p,
        .overlap_fb = cfg->overlap_fb,
        .fb_interference = cfg->fb_interference,
        .fb_given = cfg->fb_given,
    };
    if (sched_check(&spec, err))
        return PS_ERR;
    prog_reset(ctx->ps, nranks);
    /* without data parallelism or faults nothing reads the programs back
     * (event rows are streamed from the engine's hook, rec/stream.c): the
     * built-in schedules then stream, generated as the engine runs
     * (sched/gen_pipe.h), with the optimizer step dp_lower would append as each
     * lane's last op, and ps stays empty */
    /* live mode runs the stored programs (step/pipe_live.c) */
    int streamed =
        cfg->dp == 1 && !cfg->faults && !cfg->live && gen_pipe_applies(&spec);
    int32_t *identity = NULL;
    if (streamed) { /* one replica: sched_lower's j = 0 */
        spec.stages = ctx->stages;
        spec.rank_of = cfg->rank_of;
    }
    for (int32_t j = 0; j < cfg->dp && !streamed; j++) {
        /* each replica's pipeline is the same schedule on its own ranks,
         * timed on their devices */
        spec.stages = ctx->stages + (size_t)j * nstages;
        if (cfg->rank_of) {
            spec.rank_of = cfg->rank_of + j * cfg->p;
        } else if (j > 0 || cfg->dp > 1) {
            if (!identity && !(identity = malloc((size_t)n * sizeof *identity)))
                return ps_errf(err, "out of memory");
            for (int32_t k = 0; k < n; k++)
                identity[k] = k;
            spec.rank_of = identity + j * cfg->p;
        }
        if (sched_lower(&spec, ctx->ps, err)) {
            free(identity);
            return PS_ERR;
        }
    }
    dp_config dc = {
        .p = cfg->p,
        .v = sched_chunks(cfg->schedule, cfg->v),
        .d = cfg->dp,
        .rank_of = cfg->rank_of ? cfg->rank_of : identity,
        .first = ctx->stage_first,
        .count = ctx->stage_count,
        .layer_params = ctx->layer_params,
        .layer_bwd = ctx->layer_bwd,
        .grad_bytes = cfg->grad_bytes,
        .weight_bytes = cfg->weight_bytes,
        .bucket_bytes = cfg->bucket_bytes,
        .first_bucket_bytes = cfg->first_bucket_bytes,
        .bucketed = cfg->grad_bucketed,
        .algorithm = cfg->grad_algorithm,
        /* the reduction runs on the network like NCCL's */
        .candidates = cfg->grad_algorithm == COLL_AUTO && !cfg->grad_candidates
                          ? coll_default_candidates(COLL_ALLREDUCE)
                          : cfg->grad_candidates,
        .overlap = cfg->overlap,
        .zero = zero,
        .overlap_param_gather = cfg->overlap_param_gather,
        .optimizer_seconds = cfg->optimizer_seconds,
        .ranks_per_node = group_ranks_per_node(cfg),
        .hw = cfg->hw,
        .log = &ctx->grad_log,
        .moves = cfg->live ? &cfg->live->moves : NULL,
    };
    dp_log_clear(&ctx->grad_log);
    int rc = PS_OK;
    if (!streamed && (cfg->dp > 1 || cfg->optimizer_seconds > 0))
        rc = dp_lower(&dc, ctx->ps, nw, err);
    if (rc == PS_OK && !streamed)
        rc = prog_seal(ctx->ps, err);
    if (rc == PS_OK) {
        fault_plan fp;
        if (cfg->faults) {
            fp = *cfg->faults;
            fp.tag_label = "bucket"; /* gradient sync: tags are buckets */
        }
        /* live mode's twin runs without the faults, which the workers
         * inject for real */
        eng_set_faults(ctx->eng, cfg->faults && !cfg->live ? &fp : NULL);
        eng_set_memory(ctx->eng, ctx->rank_static);
        rc = streamed
                 ? gen_pipe_run_step(&spec, cfg->optimizer_seconds, nw,
                                     cfg->p2p, ctx->eng, &res->eng, err)
                 : eng_run(ctx->eng, ctx->ps, nw, cfg->p2p, &res->eng, err);
        eng_set_faults(ctx->eng, NULL);
        eng_set_memory(ctx->eng, NULL);
    }
    if (rc == PS_OK && cfg->live) {
        /* the simulated twin's makespan, then the same programs for real:
         * their op times become the measured ones */
        cfg->live->simulated = res->eng.makespan;
        rc = pipe_live_run(cfg, &spec, ctx->ps, ctx->stage_first,
                           ctx->stage_count, &ctx->grad_log, &res->eng.makespan,
                           err);
    }
    if (rc == PS_OK) {
        /* the ledger as the engine kept it online; mem_ledger's own order
         * when a rank's changes came from several lanes (sim/eng.h) */
        eng_stats es;
        eng_stats_of(ctx->eng, &es);
        if (es.mem_merged || cfg->live)
            rc = mem_ledger(ctx->ps, ctx->rank_static, ctx->ledger, NULL, NULL,
                            err);
        else
            memcpy(ctx->ledger, es.mem,
                   (size_t)ctx->ps->nranks * sizeof *ctx->ledger);
    }
    if (rc == PS_OK) {
        fill_stats(ctx, cfg, &dc, res);
        /* a slow or stalled rank, a failed link: not the closed form */
        if (is_uniform(ctx, cfg, nw) && !(cfg->faults && cfg->faults->n > 0)) {
            const sched_stage *g = &ctx->stages[0];
            int dual = cfg->schedule == SCHED_DUALPIPE ||
                       cfg->schedule == SCHED_DUALPIPEV;
            res->closed_form_bubble =
                dual ? (!cfg->checkpoint && !cfg->fb_given
                            ? pipe_closed_form_dual(cfg->schedule, cfg->p,
                                                    cfg->m, g->fwd, g->bwd,
                                                    g->wgt)
                            : NAN)
                : sched_splits(&spec)
                    ? (cfg->v == 1 && !cfg->checkpoint
                           ? pipe_closed_form_split(cfg->schedule, cfg->p,
                                                    cfg->m, g->fwd, g->bwd,
                                                    g->wgt)
                           : NAN)
                    : pipe_closed_form_bubble(cfg->schedule, cfg->p, cfg->v,
                                              cfg->m);
        }
    }
    free(identity);
    return rc;
}

/* One rule for every failure once the run has its inputs (README, "The
 * results database"): a failed run is recorded as a run row with status
 * 'failed' and the message, never with a timeline that could pass for a
 * complete one. */
int pipe_run(pipe_ctx *ctx, const pipe_config *cfg, net *nw, rec_db *db,
             pipe_result *res, ps_err *err)
{
    memset(res, 0, sizeof *res);
    int built = 0;
    /* event and transfer rows are written as the engine completes ops
     * (rec_stream_begin), in the run's transaction that record() commits */
    /* (live mode's rows are read back from its measured programs) */
    int events = db && cfg->record == REC_EVENTS && !cfg->live;
    eng_sink sink;
    if (events && rec_stream_begin(db, &sink, err))
        return PS_ERR;
    if (events)
        eng_set_sink(ctx->eng, &sink);
    int rc = simulate(ctx, cfg, nw, res, &built, err);
    if (events)
        eng_set_sink(ctx->eng, NULL);
    /* a run cut short by a signal or a limit leaves no rows: the whole
     * scenario stops there (base/limit.h) */
    if (db && rc != PS_OK && limit_stopped())
        rec_stream_cancel(db);
    if (!db || (rc != PS_OK && limit_stopped()))
        return rc;
    if (rc == PS_OK)
        return record(ctx, cfg, nw, db, res, NULL, 1, err);
    ps_err rec_err;
    char msg[sizeof err->msg];
    memcpy(msg, err->msg, sizeof msg);
    if (record(ctx, cfg, nw, db, res, msg, built, &rec_err))
        ps_errf(err, "%s (and recording the failure failed: %s)", msg,
                rec_err.msg);
    return PS_ERR;
}
