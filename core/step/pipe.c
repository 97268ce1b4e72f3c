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
#include "par/dp.h"
#include "par/ep.h"
#include "par/fold.h"
#include "par/links.h"
#include "par/pass.h"
#include "par/sim.h"
#include "sched/gen_pipe.h"
#include "sim/mem.h"
#include "step/pipe_impl.h"

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
    par_log_free(&ctx->log);
    par_sim_free(&ctx->sim);
    par_fold_free(&ctx->replicas);
    free(ctx->members);
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
    free(ctx->layer_fwd);
    free(ctx->moe);
    par_ep_state_free(&ctx->ep_state);
    free(ctx->exposed_a2a);
    free(ctx->exposed_a2a_pairs);
    free(ctx->layer_shared);
    free(ctx->layer_static);
    free(ctx->layer_work);
    free(ctx->stage_params);
    free(ctx->stage_first);
    free(ctx->stage_count);
    free(ctx->rank_static);
    free(ctx->ledger);
    free(ctx);
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
            grow((void **)&ctx->stage_params, (size_t)nstages,
                 sizeof(double)) ||
            grow((void **)&ctx->stage_count, (size_t)nstages, sizeof(int32_t)))
            return -1;
        ctx->stages_cap = nstages;
    }
    if (nlayers > ctx->layers_cap) {
        if (grow((void **)&ctx->layer_params, (size_t)nlayers,
                 sizeof(double)) ||
            grow((void **)&ctx->layer_shared, (size_t)nlayers,
                 sizeof(double)) ||
            grow((void **)&ctx->layer_static, (size_t)nlayers,
                 sizeof(double)) ||
            grow((void **)&ctx->layer_work, (size_t)nlayers, sizeof(double)) ||
            grow((void **)&ctx->layer_bwd, (size_t)nlayers, sizeof(double)) ||
            grow((void **)&ctx->layer_fwd, (size_t)nlayers, sizeof(double)) ||
            grow((void **)&ctx->moe, (size_t)nlayers, sizeof *ctx->moe))
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
            grow((void **)&ctx->exposed_a2a, (size_t)p, sizeof(double)) ||
            grow((void **)&ctx->exposed_a2a_pairs, (size_t)p, sizeof(double)) ||
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

/* Is TP simulated once (par_fold_exact), asked once per network (its
 * net_id: a pointer could be a freed cluster's) and layout (a layout with
 * an explicit list is asked every run). */
static int fold_tp(pipe_ctx *ctx, const par_layout *L, const net *nw,
                   uint64_t net_id, ps_err *err)
{
    if (!L->ranks && net_id && ctx->fold_net == net_id &&
        ctx->fold_order == L->order &&
        memcmp(&ctx->fold_sizes, &L->s, sizeof L->s) == 0)
        return ctx->fold_tp;
    int f = par_fold_exact(L, PAR_TP, nw, err);
    if (f < 0)
        return f;
    ctx->fold_net = L->ranks ? 0 : net_id;
    ctx->fold_sizes = L->s;
    ctx->fold_order = L->order;
    ctx->fold_tp = f;
    return f;
}

/* The layout of cfg and the ranks simulated (ctx->sim). */
static int build_layout(pipe_ctx *ctx, const pipe_config *cfg, const net *nw,
                        par_layout *L, ps_err *err)
{
    int32_t nranks = net_ranks(nw);
    par_sizes sz;
    pipe_sizes_of(cfg, &sz);
    /* a sweep's runs share their layout: the last one's simulated ranks
     * stand (a list is read anew each run, so it is never reused) */
    if (cfg->net_id && ctx->sim_net == cfg->net_id && !cfg->ranks &&
        !L->ranks && L->order == cfg->order &&
        memcmp(&L->s, &sz, sizeof sz) == 0)
        return PS_OK;
    ctx->sim_net = 0;
    if (par_layout_init(L, &sz, cfg->order, cfg->ranks, err))
        return PS_ERR;
    if (pipe_check_world(cfg, nranks, err))
        return PS_ERR;
    for (int32_t k = 0; cfg->ranks && k < par_world(L); k++)
        if (cfg->ranks[k] < 0 || cfg->ranks[k] >= nranks)
            return ps_errf(err,
                           "ranks[%d] is rank %d, outside the cluster's %d "
                           "ranks",
                           (int)k + 1, (int)cfg->ranks[k], (int)nranks);
    int fold[PAR_NDIMS] = {0};
    fold[PAR_TP] = fold_tp(ctx, L, nw, cfg->net_id, err);
    /* an expert-parallel group crosses TP ranks when etp differs from tp:
     * every member must run for its all-to-alls (par/ep.h) */
    if (L->s.ep > 1 && L->s.etp != L->s.tp && fold[PAR_TP] > 0)
        fold[PAR_TP] = 0;
    if (fold[PAR_TP] < 0 || par_sim_build(&ctx->sim, L, fold, err))
        return PS_ERR;
    ctx->sim_net = cfg->net_id;
    return PS_OK;
}

/* Stage costs of every instance and the imbalance. *built is set once
 * the stage rows are complete. */
static int build_costs(pipe_ctx *ctx, const pipe_config *cfg, int32_t nranks,
                       pipe_result *res, int *built, ps_err *err)
{
    const par_sim *sim = &ctx->sim;
    int32_t nstages = cfg->p * cfg->v, n = sim->n * cfg->p;
    /* stage buffers hold every instance's stage costs (pipe_stage_costs) */
    if ((int64_t)nstages * sim->n > INT32_MAX ||
        size_buffers(ctx, nstages * sim->n, n, nranks, cfg->nlayers))
        return ps_errf(err, "out of memory");
    pipe_costs costs = {
        .stages = ctx->stages,
        .rows = ctx->stage_rows,
        .first = ctx->stage_first,
        .count = ctx->stage_count,
        .layer_params = ctx->layer_params,
        .layer_bwd = ctx->layer_bwd,
        .layer_fwd = ctx->layer_fwd,
        .layer_shared = ctx->layer_shared,
        .layer_static = ctx->layer_static,
        .layer_work = ctx->layer_work,
        .nshared = &ctx->nshared,
        .stage_params = ctx->stage_params,
        .n = sim->n,
        .rank_of = sim->rank_of,
    };
    if (pipe_stage_costs(cfg, &costs, err))
        return PS_ERR;
    ctx->has_moe = 0;
    for (int32_t i = 0; i < cfg->nlayers; i++) {
        const pipe_layer *l = &cfg->layers[i];
        ctx->moe[i] = (par_moe){
            .dispatch_bytes = l->moe_dispatch_bytes,
            .combine_bytes = l->moe_combine_bytes,
            .dispatch_grad_bytes = l->moe_dispatch_grad_bytes >= 0
                                       ? l->moe_dispatch_grad_bytes
                                       : l->moe_dispatch_bytes,
            .combine_grad_bytes = l->moe_combine_grad_bytes >= 0
                                      ? l->moe_combine_grad_bytes
                                      : l->moe_combine_bytes,
            .fwd_pre = l->moe_fwd_pre_time,
            .fwd_expert = l->moe_fwd_expert_time,
            .bwd_pre = l->moe_bwd_pre_time,
            .bwd_expert = l->moe_bwd_expert_time,
            .expert_params = l->moe_expert_params,
            .flex_nvl = l->moe_flex_nvl_share,
            .flex_rdma = l->moe_flex_rdma_share,
        };
        ctx->has_moe |= ctx->moe[i].dispatch_bytes > 0 ||
                        ctx->moe[i].combine_bytes > 0 ||
                        ctx->moe[i].expert_params > 0;
    }
    *built = 1;
    double tmax = 0, tsum = 0;
    for (int32_t s = 0; s < nstages; s++) {
        double t = ctx->stages[s].fwd + ctx->stages[s].bwd + ctx->stages[s].wgt;
        tsum += t;
        if (t > tmax)
            tmax = t;
    }
    res->imbalance = tsum > 0 ? tmax / (tsum / nstages) : 1;
    return PS_OK;
}

/* The passes' shared state for cfg (par/pass.h). */
static void make_step(pipe_ctx *ctx, const pipe_config *cfg, const net *nw,
                      const par_layout *L, const sched_spec *spec, par_step *st)
{
    *st = (par_step){
        .layout = L,
        .sim = &ctx->sim,
        .ps = ctx->ps,
        .nw = nw,
        .gpus_per_node = cfg->gpus_per_node,
        .hw = cfg->hw,
        .sched = *spec,
        .v = sched_chunks(cfg->schedule, cfg->v),
        .nstages = cfg->p * cfg->v,
        .stages = ctx->stages,
        .first = ctx->stage_first,
        .count = ctx->stage_count,
        .layer_params = ctx->layer_params,
        .layer_bwd = ctx->layer_bwd,
        .layer_shared = ctx->nshared ? ctx->layer_shared : NULL,
        .layer_static = ctx->layer_static,
        .layer_work = ctx->layer_work,
        .stage_params = ctx->stage_params,
        .weight_bytes = cfg->weight_bytes,
        .grad_bytes = cfg->grad_bytes,
        .optimizer_bytes = cfg->optimizer_bytes,
        .dp =
            {
                .bucket_bytes = cfg->bucket_bytes,
                .first_bucket_bytes = cfg->first_bucket_bytes,
                .bucketed = cfg->grad_bucketed,
                .algorithm = cfg->grad_algorithm,
                /* the reduction runs on the network like NCCL's */
                .candidates =
                    cfg->grad_algorithm == COLL_AUTO && !cfg->grad_candidates
                        ? coll_default_candidates(COLL_ALLREDUCE)
                        : cfg->grad_candidates,
                .protocol = cfg->grad_protocol,
                .overlap = cfg->overlap,
                .overlap_param_gather = cfg->overlap_param_gather,
                .param_gather_start = cfg->param_gather_start,
                .reshard = cfg->reshard,
                .optimizer_seconds = cfg->optimizer_seconds,
            },
        .ep =
            {
                .layers = ctx->has_moe ? ctx->moe : NULL,
                .layer_fwd = ctx->layer_fwd,
                .comm_share = cfg->ep_comm_share,
                .overlap = cfg->ep_overlap,
                .state = &ctx->ep_state,
                .exposed = ctx->exposed_a2a,
                .exposed_pairs = ctx->exposed_a2a_pairs,
            },
        .log = &ctx->log,
        .moves = cfg->live ? &cfg->live->moves : NULL,
    };
}

/* The closed-form bubble of a uniform step (else NAN). */
static double closed_form(const pipe_ctx *ctx, const pipe_config *cfg,
                          const sched_spec *spec)
{
    const sched_stage *g = &ctx->stages[0];
    int dual =
        cfg->schedule == SCHED_DUALPIPE || cfg->schedule == SCHED_DUALPIPEV;
    if (dual)
        return !cfg->checkpoint && !cfg->fb_given
                   ? pipe_closed_form_dual(cfg->schedule, cfg->p, cfg->m,
                                           g->fwd, g->bwd, g->wgt)
                   : NAN;
    if (sched_splits(spec))
        return cfg->v == 1 && !cfg->checkpoint
                   ? pipe_closed_form_split(cfg->schedule, cfg->p, cfg->m,
                                            g->fwd, g->bwd, g->wgt)
                   : NAN;
    return pipe_closed_form_bubble(cfg->schedule, cfg->p, cfg->v, cfg->m);
}

/* Runs the engine on the programs (or the generated lanes) and takes the
 * memory ledger it kept. */
static int execute(pipe_ctx *ctx, const pipe_config *cfg, net *nw,
                   const sched_spec *spec, int streamed, pipe_result *res,
                   ps_err *err)
{
    fault_plan fp;
    if (cfg->faults) {
        fp = *cfg->faults;
        fp.tag_label = "bucket"; /* gradient sync: tags are buckets */
    }
    /* live mode's twin runs without the faults, which the workers inject
     * for real */
    eng_set_faults(ctx->eng, cfg->faults && !cfg->live ? &fp : NULL);
    eng_set_memory(ctx->eng, ctx->rank_static);
    /* identical replicas run once (par/fold.h): not with faults, live
     * mode or event rows, which need every rank's own ops */
    res->folded = 0;
    int rc = PS_OK;
    if (!streamed && cfg->fold && !cfg->faults && !cfg->live &&
        cfg->record != REC_EVENTS)
        rc = par_fold_build(&ctx->replicas, ctx->ps, &ctx->sim, nw,
                            ctx->rank_static, err);
    if (rc == 1) {
        res->folded = 1;
        net_set_image(nw, ctx->replicas.image);
        rc = eng_run(ctx->eng, ctx->replicas.ps, nw, cfg->p2p, &res->eng, err);
        net_set_image(nw, NULL);
        if (rc == PS_OK)
            par_fold_unfold(&ctx->replicas, ctx->ps, &ctx->sim);
    } else if (rc == PS_OK) {
        rc = streamed
                 ? gen_pipe_run_step(spec, cfg->optimizer_seconds, nw, cfg->p2p,
                                     ctx->eng, &res->eng, err)
                 : eng_run(ctx->eng, ctx->ps, nw, cfg->p2p, &res->eng, err);
    }
    eng_set_faults(ctx->eng, NULL);
    eng_set_memory(ctx->eng, NULL);
    if (rc != PS_OK)
        return rc;
    /* the ledger as the engine kept it online; mem_ledger's own order
     * when a rank's changes came from several lanes (sim/eng.h) */
    eng_stats es;
    eng_stats_of(ctx->eng, &es);
    if (es.mem_merged)
        return mem_ledger(ctx->ps, ctx->rank_static, ctx->ledger, NULL, NULL,
                          err);
    for (int32_t r = 0; r < ctx->ps->nranks; r++) /* folded: the image's */
        ctx->ledger[r] = es.mem[res->folded ? ctx->replicas.image[r] : r];
    return PS_OK;
}

/* The passes' programs, sealed. Where replicas will fold (execute's
 * conditions), the passes keep only instance 0's communication ops, the
 * others compared and dropped as lowered (par_fold_stream_begin); when
 * the replicas prove different, every op is lowered again and kept.
 * ZeRO-2/3 steps stream too (their passes read compute lanes back, which
 * stay); MoE steps do not: their replicas fold by an expert group's span
 * (par_fold_build), not by one. */
static int lower(pipe_ctx *ctx, const pipe_config *cfg, const net *nw,
                 par_step *st, ps_err *err)
{
    int fold = cfg->fold && !cfg->faults && !cfg->live &&
               cfg->record != REC_EVENTS && !ctx->has_moe;
    int rc = par_fold_stream_begin(&ctx->replicas, ctx->ps, &ctx->sim, nw, fold,
                                   err);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return par_lower(st, err) ? PS_ERR : prog_seal(ctx->ps, err);
    st->fold = &ctx->replicas.hook;
    rc = par_lower(st, err);
    st->fold = NULL;
    /* (lowering stops at the first difference: end says 0 then) */
    if (rc == PS_OK || (ctx->replicas.broken && !limit_stopped()))
        rc = par_fold_stream_end(&ctx->replicas, ctx->ps, &ctx->sim, nw,
                                 ctx->rank_static, err);
    if (rc != 0)
        return rc < 0 ? rc : PS_OK;
    /* not proven identical: every replica's ops, as without folding */
    prog_reset(ctx->ps, ctx->ps->nranks);
    par_log_clear(&ctx->log);
    if (par_plan(st, err) || par_lower(st, err))
        return PS_ERR;
    return prog_seal(ctx->ps, err);
}

/* Everything of pipe_run but the recording. *built is set once the stage
 * rows are complete (a failed run records them when they are). */
static int simulate(pipe_ctx *ctx, const pipe_config *cfg, net *nw,
                    pipe_result *res, int *built, ps_err *err)
{
    res->closed_form_bubble = NAN;
    res->imbalance = NAN;
    int32_t nranks = net_ranks(nw);
    if (cfg->p < 1 || cfg->v < 1 || cfg->m < 1 || cfg->dp < 1)
        return ps_errf(err, "stages, virtual_stages, microbatches and dp must "
                            "be at least 1");
    if (cfg->schedule == SCHED_DUALPIPE && cfg->v != 1)
        return ps_errf(err,
                       "dualpipe schedule holds each of the %d stages twice "
                       "(two copies, not model chunks): leave virtual_stages "
                       "at 1 (got %d)",
                       (int)cfg->p, (int)cfg->v);
    par_layout *L = &ctx->layout;
    if (build_layout(ctx, cfg, nw, L, err))
        return PS_ERR;
    sched_spec spec = {
        .kind = cfg->schedule,
        .p = cfg->p,
        .v = sched_chunks(cfg->schedule, cfg->v),
        .m = cfg->m,
        .checkpoint = cfg->checkpoint,
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
    if (build_costs(ctx, cfg, nranks, res, built, err))
        return PS_ERR;
    spec.stages = ctx->stages;
    spec.rank_of = ctx->sim.rank_of;
    par_step st;
    make_step(ctx, cfg, nw, L, &spec, &st);
    /* static memory: weights, gradients and optimizer state (par/dp.c) */
    for (int32_t r = 0; r < nranks; r++)
        ctx->rank_static[r] = 0;
    par_memory(&st, ctx->rank_static);
    if (sched_check(&spec, err))
        return PS_ERR;
    prog_reset(ctx->ps, nranks);
    par_log_clear(&ctx->log);
    if (par_plan(&st, err))
        return PS_ERR;
    /* with one instance and no pass adding communication nothing reads
     * the programs back (event rows are streamed from the engine's hook,
     * rec/stream.c): the built-in schedules then stream, generated as the
     * engine runs (sched/gen_pipe.h), with the optimizer step the dp pass
     * would append as each lane's last op, and ps stays empty; live mode
     * runs the stored programs (step/pipe_live.c) */
    int streamed = ctx->sim.n == 1 && !cfg->faults && !cfg->live &&
                   !par_arrays(&st) && gen_pipe_applies(&spec);
    int rc = streamed ? PS_OK : lower(ctx, cfg, nw, &st, err);
    if (rc == PS_OK)
        rc = execute(ctx, cfg, nw, &spec, streamed, res, err);
    if (rc == PS_OK && cfg->live) {
        /* the simulated twin's makespan, then the same programs for real:
         * their op times become the measured ones, and the ledger is
         * read back from them */
        cfg->live->simulated = res->eng.makespan;
        rc = pipe_live_run(cfg, &spec, ctx->ps, ctx->stage_first,
                           ctx->stage_count, &ctx->log, ctx->sim.rank_of,
                           &res->eng.makespan, err);
        if (rc == PS_OK)
            rc = mem_ledger(ctx->ps, ctx->rank_static, ctx->ledger, NULL, NULL,
                            err);
    }
    if (rc == PS_OK) {
        pipe_fill_stats(ctx, cfg, &st, res);
        /* a slow or stalled rank, a failed link: not the closed form */
        if (pipe_is_uniform(ctx, cfg, &st, nw) &&
            !(cfg->faults && cfg->faults->n > 0))
            res->closed_form_bubble = closed_form(ctx, cfg, &spec);
    }
    return rc;
}

/* One rule for every failure once the run has its inputs (README, "The
 * results database"): a failed run is recorded as a run row with status
 * 'failed' and the message, never with a timeline that could pass for a
 * complete one. */
int pipe_run(pipe_ctx *ctx, const pipe_config *cfg, net *nw,
             const rec_sink *sink, pipe_result *res, ps_err *err)
{
    memset(res, 0, sizeof *res);
    int built = 0;
    /* event and transfer rows are handed out as the engine completes ops
     * (sink->stream_begin), in the run that pipe_record()'s write ends */
    /* (live mode's rows are read back from its measured programs) */
    int events = sink && cfg->record == REC_EVENTS && !cfg->live;
    eng_sink hook;
    if (events && sink->stream_begin(sink->ctx, &hook, err))
        return PS_ERR;
    if (events)
        eng_set_sink(ctx->eng, &hook);
    int rc = simulate(ctx, cfg, nw, res, &built, err);
    if (events)
        eng_set_sink(ctx->eng, NULL);
    /* a run cut short by a signal or a limit leaves no rows: the whole
     * scenario stops there (base/limit.h) */
    if (sink && rc != PS_OK && limit_stopped())
        sink->stream_cancel(sink->ctx);
    if (!sink || (rc != PS_OK && limit_stopped()))
        return rc;
    if (rc == PS_OK)
        return pipe_record(ctx, cfg, nw, sink, res, NULL, 1, err);
    ps_err rec_err;
    char msg[sizeof err->msg];
    memcpy(msg, err->msg, sizeof msg);
    if (pipe_record(ctx, cfg, nw, sink, res, msg, built, &rec_err))
        ps_errf(err, "%s (and recording the failure failed: %s)", msg,
                rec_err.msg);
    return PS_ERR;
}
