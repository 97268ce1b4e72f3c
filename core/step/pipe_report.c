/* What a simulated step reports (step/pipe.c simulates, this file
 * reads the engine's result): whether the run is uniform, so that the
 * bubble's closed form applies; each rank's statistics (bubble, peak
 * memory, exposed communication, per replica when folded); and the rows
 * handed to the run's sink (runs, stages, ranks, members, collectives). Split
 * from step/pipe.c so that file holds the step's building and running. */
#include "step/pipe_report.h"

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
#include "sim/mem.h"

/* Stage times equal within this relative difference count as uniform: the
 * sums of a partition's layer times differ in their last bits. */
#define UNIFORM_REL_TOL 1e-12

/* Uniform: every stage the same forward and backward time and every stage
 * boundary free (zero bytes over zero latency or infinite bandwidth). */
int pipe_is_uniform(const pipe_ctx *ctx, const pipe_config *cfg,
                    const par_step *st, const net *nw)
{
    const par_sim *sim = &ctx->sim;
    int32_t nstages = cfg->p * cfg->v, p = cfg->p;
    const sched_stage *s0 = &ctx->stages[0];
    for (int32_t s = 0; s < nstages * sim->n; s++) { /* every instance */
        const sched_stage *x = &ctx->stages[s];
        if (fabs(x->fwd - s0->fwd) > UNIFORM_REL_TOL * s0->fwd ||
            fabs(x->bwd - s0->bwd) > UNIFORM_REL_TOL * s0->bwd ||
            fabs(x->wgt - s0->wgt) > UNIFORM_REL_TOL * s0->wgt)
            return 0;
    }
    for (int32_t s = 0; s < nstages; s++) {
        const sched_stage *x = &ctx->stages[s];
        for (int32_t i = 0; s + 1 < nstages && i < sim->n; i++) {
            int32_t a = sim->rank_of[i * p + pipe_stage_rank(cfg, s)];
            int32_t b = sim->rank_of[i * p + pipe_stage_rank(cfg, s + 1)];
            if (a != b && (net_lone_time(nw, a, b, x->out_bytes) > 0 ||
                           net_lone_time(nw, b, a, x->out_bytes) > 0))
                return 0;
        }
    }
    /* gradient sync, the finalize reductions and the optimizer step are
     * outside the closed form unless they cost nothing */
    if (cfg->optimizer_seconds > 0)
        return 0;
    for (int32_t i = 1; i < sim->n; i++)
        for (int32_t r = 0; r < p; r++)
            if (net_lone_time(nw, sim->rank_of[r], sim->rank_of[i * p + r], 4) >
                0)
                return 0;
    for (int32_t f = 0; f < st->nfinalize; f++)
        for (int32_t i = 0; i < sim->n; i++)
            if (net_lone_time(nw, sim->rank_of[i * p + st->finalize[f].r0],
                              sim->rank_of[i * p + st->finalize[f].r1], 4) > 0)
                return 0;
    return 1;
}

void pipe_fill_stats(pipe_ctx *ctx, const pipe_config *cfg, const par_step *st,
                     pipe_result *res)
{
    const par_sim *sim = &ctx->sim;
    int32_t n = sim->n * cfg->p;
    /* compute lanes come first, one per simulated rank, index i * p + r;
     * the engine summed their compute time as the ops ended */
    eng_stats es;
    eng_stats_of(ctx->eng, &es);
    for (int32_t l = 0; l < n; l++) /* folded: the representative's */
        ctx->busy[l] = es.busy[res->folded ? ctx->replicas.lane_fold[l] : l];
    for (int32_t l = 0; cfg->live && l < n; l++) { /* measured */
        const prog_lane *lane = &ctx->ps->lanes[l];
        ctx->busy[l] = 0;
        for (int32_t i = 0; i < lane->n; i++)
            if (lane->ops[i].type == PROG_COMPUTE)
                ctx->busy[l] += lane->ops[i].t_end - lane->ops[i].t_start;
    }
    for (int32_t k = 0; k < n; k++)
        ctx->exposed_a2a[k] = ctx->exposed_a2a_pairs[k] = 0;
    par_exposed(st, ctx->exposed); /* NAN: nothing to wait on */
    double sum = 0, makespan = res->eng.makespan;
    int unknown = 0;
    res->nover = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t cr = sim->rank_of[k];
        double b = makespan > 0 ? (makespan - ctx->busy[k]) / makespan : 0;
        ctx->ranks[k] = cr;
        ctx->stage_bubble[k] = b;
        sum += b;
        ctx->peak[k] = ctx->ledger[cr].peak;
        ctx->t_peak[k] = ctx->ledger[cr].t_peak;
        ctx->static_mem[k] = ctx->ledger[cr].static_bytes;
        double exposed = ctx->exposed[k];
        if (isnan(exposed))
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
    /* per stage: the longest wait over the instances of its rank */
    for (int32_t s = 0; s < cfg->p * cfg->v; s++) {
        double worst = NAN;
        for (int32_t i = 0; i < sim->n; i++) {
            double x = ctx->rank_rows[i * cfg->p + pipe_stage_rank(cfg, s)]
                           .exposed_comm;
            if (!isnan(x))
                worst = isnan(worst) ? x : fmax(worst, x);
        }
        ctx->stage_rows[s].exposed_comm = worst;
    }
    res->makespan = makespan;
    res->bubble = sum / n;
    res->n = n;
    res->rank = ctx->ranks;
    res->per = sim->per;
    res->member = sim->member;
    res->ninstances = sim->n;
    res->tp_unfolded = sim->unfolded[PAR_TP];
    res->stage_bubble = ctx->stage_bubble;
    res->peak_memory = ctx->peak;
    res->t_peak = ctx->t_peak;
    res->static_memory = ctx->static_mem;
    res->exposed_comm = ctx->exposed;
    res->exposed_a2a = ctx->exposed_a2a;
    res->exposed_a2a_pairs = ctx->exposed_a2a_pairs;
    res->capacity = ctx->capacity;
}

/* The rank_member rows of the last run in ctx->members (*n of them);
 * -1 when out of memory. */
static int members(pipe_ctx *ctx, int32_t *n)
{
    const par_sim *sim = &ctx->sim;
    int32_t total = sim->n * sim->p * sim->per;
    if (total > ctx->members_cap) {
        rec_member *m = realloc(ctx->members, (size_t)total * sizeof *m);
        if (!m)
            return -1;
        ctx->members = m;
        ctx->members_cap = total;
    }
    for (int32_t k = 0, i = 0; k < sim->n * sim->p; k++)
        for (int32_t q = 0; q < sim->per; q++, i++) {
            int32_t c[PAR_NDIMS];
            par_sim_member_coords(sim, &ctx->layout, k, q, c);
            ctx->members[i] = (rec_member){
                sim->rank_of[k], sim->member[(size_t)k * sim->per + q],
                c[PAR_TP],       c[PAR_CP],
                c[PAR_DP],       c[PAR_PP]};
        }
    *n = total;
    return 0;
}

/* Hands the run's rows to sink; error != NULL as failed (summary level,
 * no rank rows; stage rows only when with_stages). */
int pipe_record(pipe_ctx *ctx, const pipe_config *cfg, const net *nw,
                const rec_sink *sink, pipe_result *res, const char *error,
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
        .folded = !error && res->folded,
    };
    /* one collective row per gradient-sync bucket and data-parallel group,
     * and per finalize reduction and instance, with the algorithm and
     * protocol auto chose (rec/row.h) */
    int32_t ncoll = error ? 0 : ctx->log.n;
    rec_collective *coll = calloc((size_t)ncoll + 1, sizeof *coll);
    if (!coll)
        return ps_errf(err, "out of memory");
    for (int32_t k = 0; k < ncoll; k++) {
        const par_coll *e = &ctx->log.c[k];
        double t0, t1;
        par_log_span(&ctx->log, ctx->ps, k, &t0, &t1);
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
    /* what each simulated rank stands for (events level) */
    int32_t nm = 0;
    if (!error && cfg->record == REC_EVENTS && members(ctx, &nm))
        return ps_errf(err, "out of memory");
    rec_payload pl = {
        .members = nm ? ctx->members : NULL,
        .nmembers = nm,
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
    int rc = sink->write(sink->ctx, &pl, error ? REC_SUMMARY : cfg->record,
                         &res->id, err);
    free(coll);
    return rc;
}
