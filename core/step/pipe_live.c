/* A pipeline step run for real (issue 25): the programs sched_lower made
 * for the engine run on one process per rank (live/live.h), and each
 * compute op is the MLP of live/mlp.h on real microbatches: F forward
 * through the stage's layers, R the recompute under checkpointing, B the
 * input gradient, W the weight gradient (after its B, or inside B when the
 * unit has no W). Activations and their gradients cross the stage
 * boundaries in the programs' messages (sched_msg_decode says which), or
 * by hand where two neighbour stages share a rank. The accumulated
 * gradients come back and are held against the full-batch gradient that
 * one process computes (pipe_live.grad_error).
 * The callbacks live/live.h calls on a worker (setup, compute, send,
 * receive, result, teardown) all act on one worker's state (plive,
 * step/pipe_live_impl.h): this file sets it up, moves the messages,
 * returns the results and compares them (the step's answer); the compute
 * callback, a unit's F, R, B and W, is step/pipe_live_unit.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "step/pipe_live_impl.h"

#include "par/dp.h"

/* ------------------------------------------------------------------ */
/* Setup                                                               */

/* Which chunk runs each unit's forward, and which units have a W. */
static void scan_lanes(plive *c, const prog_set *ps, int32_t rank)
{
    for (int32_t l = 0; l < ps->nlanes; l++) {
        if (ps->lanes[l].rank != rank)
            continue;
        for (int32_t i = 0; i < ps->lanes[l].n; i++) {
            const prog_op *op = &ps->lanes[l].ops[i];
            if (op->type != PROG_COMPUTE || op->mb < 0 ||
                op->chunk >= c->nchunks)
                continue;
            if (op->kind == PROG_F || op->kind == PROG_FB_F)
                c->slot_of[op->stage * c->cfg->m + op->mb] = op->chunk;
            c->backward |= op->kind == PROG_B || op->kind == PROG_FB_B;
            if (op->kind == PROG_W)
                c->s[op->chunk].has_w[op->mb] = 1;
        }
    }
}

/* The rank's gradients in one buffer, laid out as dp_lower cuts them into
 * buckets (step/dp.c plan_chunk): chunks in the order their last backward
 * runs on the compute lane, each chunk's layers last to first, a layer's
 * weights then biases. Bucket k of the rank is then bytes off[k] .. of
 * it, off the prefix sums of the log's bucket sizes. */
static int layout_grads(plive *c, ps_err *err)
{
    const prog_lane *lane = &c->ps->lanes[c->j * c->cfg->p + c->r];
    int32_t V = c->nchunks;
    int32_t *last = malloc((size_t)V * sizeof *last);
    int32_t *order = malloc((size_t)V * sizeof *order);
    c->gbuf = calloc((size_t)c->ngbuf + 1, sizeof *c->gbuf);
    if (!last || !order || !c->gbuf) {
        free(last);
        free(order);
        return ps_errf(err, "out of memory");
    }
    par_dp_last_backwards(lane, V, last);
    for (int32_t ch = 0; ch < V; ch++) { /* by last backward (stable) */
        int32_t k = ch;
        while (k > 0 && last[order[k - 1]] > last[ch]) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = ch;
    }
    int64_t at = 0;
    for (int32_t q = 0; q < V; q++) {
        slot *s = &c->s[order[q]];
        for (int32_t l = s->count - 1; l >= 0; l--) {
            s->grad[l] = c->gbuf + at;
            at += mlp_params(&c->model, s->first + l);
        }
    }
    free(last);
    free(order);
    /* the buckets of this pipeline rank: replica 0's communication lane
     * is p d + r (step/dp.c) */
    int32_t lane0 = c->cfg->p * c->cfg->dp + c->r;
    c->boff = malloc(((size_t)(c->log ? c->log->n : 0) + 1) * sizeof *c->boff);
    if (!c->boff)
        return ps_errf(err, "out of memory");
    int64_t off = 0;
    for (int32_t k = 0; c->log && k < c->log->n; k++)
        if (c->log->c[k].lanes[0] == lane0) {
            c->boff[c->nbuckets++] = off;
            off += (int64_t)(c->log->c[k].bytes / sizeof(double));
        }
    if (c->cfg->dp > 1 && off != c->ngbuf)
        return ps_errf(err,
                       "rank %d: the gradient sync's buckets hold %lld "
                       "values, the MLP's stages %lld (each layer's params "
                       "must be the MLP's)",
                       (int)c->rank_of[c->j * c->cfg->p + c->r], (long long)off,
                       (long long)c->ngbuf);
    return PS_OK;
}

static int pl_setup(void *ctx, int32_t rank, ps_err *err)
{
    plive *c = ctx;
    const pipe_config *cfg = c->cfg;
    int32_t m = cfg->m;
    for (int32_t k = 0; k < cfg->p * cfg->dp; k++)
        if (c->rank_of[k] == rank) {
            c->r = k % cfg->p;
            c->j = k / cfg->p;
        }
    c->s = calloc((size_t)c->nchunks, sizeof *c->s);
    c->slot_of = malloc((size_t)c->S * (size_t)m * sizeof *c->slot_of);
    if (!c->s || !c->slot_of)
        return ps_errf(err, "out of memory");
    for (int32_t k = 0; k < c->S * m; k++)
        c->slot_of[k] = -1;
    for (int32_t ch = 0; ch < c->nchunks; ch++) {
        slot *s = &c->s[ch];
        s->stage = sched_place_stage(c->spec->placement, c->spec->place, cfg->p,
                                     c->spec->v, ch, c->r);
        s->first = c->first[s->stage];
        s->count = c->count[s->stage];
        s->wt = calloc((size_t)s->count + 1, sizeof *s->wt);
        s->grad = calloc((size_t)s->count + 1, sizeof *s->grad);
        s->u = calloc((size_t)m, sizeof *s->u);
        s->has_w = calloc((size_t)m, 1);
        if (!s->wt || !s->grad || !s->u || !s->has_w)
            return ps_errf(err, "out of memory");
        for (int32_t l = 0; l < s->count; l++) {
            int64_t np = mlp_params(&c->model, s->first + l);
            s->wt[l] = malloc((size_t)np * sizeof(double));
            if (!s->wt[l])
                return ps_errf(err, "out of memory");
            c->ngbuf += np;
            mlp_init_layer(&c->model, s->first + l, s->wt[l]);
        }
        for (int32_t mb = 0; mb < m; mb++) {
            s->u[mb].a = calloc((size_t)s->count, sizeof(double *));
            s->u[mb].dz = calloc((size_t)s->count, sizeof(double *));
            if (!s->u[mb].a || !s->u[mb].dz)
                return ps_errf(err, "out of memory");
        }
    }
    scan_lanes(c, c->ps, rank);
    c->prev = calloc((size_t)c->ps->nlanes + 1, sizeof *c->prev);
    if (!c->prev)
        return ps_errf(err, "out of memory");
    return layout_grads(c, err);
}
static void free_unit(plive *c, const slot *s, unit *u)
{
    free(u->x);
    for (int32_t l = 0; l < s->count; l++) {
        free(u->a[l]);
        free(u->dz[l]);
        u->a[l] = u->dz[l] = NULL;
    }
    free(u->out);
    free(u->gout);
    free(u->gin);
    u->x = u->out = u->gout = u->gin = NULL;
    u->f = u->b = u->w = 0;
    (void)c;
}

static int pl_reset(void *ctx, int32_t rank, ps_err *err)
{
    plive *c = ctx;
    (void)rank, (void)err;
    memset(c->gbuf, 0, (size_t)c->ngbuf * sizeof *c->gbuf);
    for (int32_t l = 0; l < c->ps->nlanes; l++) /* nothing before */
        c->prev[l] = (prog_op){.type = PROG_DELAY, .mb = -1};
    for (int32_t ch = 0; ch < c->nchunks; ch++) {
        slot *s = &c->s[ch];
        for (int32_t mb = 0; mb < c->cfg->m; mb++)
            free_unit(c, s, &s->u[mb]);
    }
    c->held = c->held_peak = c->recompute = 0;
    return PS_OK;
}

/* ------------------------------------------------------------------ */
/* Messages                                                            */

/* The unit a message's payload belongs to: the sender's (send) or the
 * receiver's (!send) slot, its microbatch, and whether it is a gradient.
 * NULL when the message is not a pipeline transfer of this replica. */
static unit *msg_unit(plive *c, const prog_op *op, int send, int *back,
                      int32_t *layer)
{
    if (c->nmsg <= 0 || op->msg / c->nmsg != c->j)
        return NULL;
    int32_t b, mb;
    sched_msg_decode(c->spec, (int32_t)(op->msg % c->nmsg), back, &b, &mb);
    /* the activation leaves stage b for b + 1, its gradient comes back */
    int32_t stage = (*back == send) ? b + 1 : b;
    int32_t t = c->slot_of[stage * c->cfg->m + mb];
    *layer = c->first[b + 1];
    return t < 0 ? NULL : &c->s[t].u[mb];
}

/* A gradient-sync message (dp > 1): its doubles in gbuf. The collective
 * counts float32 elements; a range's ends are rounded down to whole
 * doubles, the same on both sides, so the ranges still tile each bucket
 * and every double is reduced as the element at its first half is. */
static int grad_range(const plive *c, const prog_op *op, int recv, double **at,
                      size_t *len)
{
    if (op->msg < c->nmsg * c->cfg->dp || !c->moves ||
        op->msg >= c->moves->cap || op->tag < 0 || op->tag >= c->nbuckets)
        return -1;
    const coll_move *mv = &c->moves->m[op->msg];
    int64_t lo = mv->lo / 2, hi = (mv->lo + mv->cnt) / 2;
    int64_t to = recv ? mv->dlo / 2 : lo;
    *at = c->gbuf + c->boff[op->tag] + to;
    *len = (size_t)(hi - lo) * sizeof(double);
    return 0;
}

static int pl_send(void *ctx, int32_t rank, int32_t lane, int32_t index,
                   const prog_op *op, const void **data, size_t *len,
                   ps_err *err)
{
    plive *c = ctx;
    (void)rank, (void)lane, (void)index;
    double *g;
    if (grad_range(c, op, 0, &g, len) == 0) {
        *data = g;
        return PS_OK;
    }
    int back;
    int32_t layer;
    unit *u = msg_unit(c, op, 1, &back, &layer);
    const double *d = u ? (back ? u->gin : u->out) : NULL;
    if (!d)
        return pipe_live_wrong(c, op, "has no data to send", err);
    *data = d;
    *len = pipe_live_act_bytes(c, layer);
    return PS_OK;
}

static int pl_recv_len(void *ctx, int32_t rank, int32_t lane, int32_t index,
                       const prog_op *op, size_t *len, ps_err *err)
{
    plive *c = ctx;
    (void)rank, (void)lane, (void)index;
    int back;
    int32_t layer;
    double *g;
    if (grad_range(c, op, 1, &g, len) == 0)
        return PS_OK;
    if (!msg_unit(c, op, 0, &back, &layer))
        return pipe_live_wrong(c, op, "is not this rank's to receive", err);
    *len = pipe_live_act_bytes(c, layer);
    return PS_OK;
}

static int pl_recv_done(void *ctx, int32_t rank, int32_t lane, int32_t index,
                        const prog_op *op, const void *data, size_t len,
                        ps_err *err)
{
    plive *c = ctx;
    (void)rank, (void)lane, (void)index;
    int back;
    int32_t layer;
    double *g;
    size_t glen;
    if (grad_range(c, op, 1, &g, &glen) == 0) {
        const coll_move *mv = &c->moves->m[op->msg];
        const double *v = data;
        size_t n = len / sizeof *v;
        if (mv->add)
            for (size_t e = 0; e < n; e++)
                g[e] += v[e];
        else
            memcpy(g, v, len);
        return PS_OK;
    }
    unit *u = msg_unit(c, op, 0, &back, &layer);
    if (!u)
        return pipe_live_wrong(c, op, "is not this rank's to receive", err);
    double **to = back ? &u->gout : &u->x;
    if (*to)
        return pipe_live_wrong(c, op, "arrived twice", err);
    *to = back ? malloc(len + 1) : pipe_live_alloc_held(c, layer);
    if (!*to)
        return ps_errf(err, "out of memory");
    memcpy(*to, data, len);
    return PS_OK;
}

/* [nslots, held peak, recompute seconds], then per slot [stage, n] and n
 * gradient values, layer by layer. A unit left unfinished is an error
 * naming it. */
static int pl_result(void *ctx, int32_t rank, const void **data, size_t *len,
                     ps_err *err)
{
    plive *c = ctx;
    size_t n = 3;
    for (int32_t ch = 0; ch < c->nchunks; ch++) {
        slot *s = &c->s[ch];
        n += 2;
        for (int32_t l = 0; l < s->count; l++)
            n += (size_t)mlp_params(&c->model, s->first + l);
        for (int32_t mb = 0; mb < c->cfg->m; mb++) {
            const unit *u = &s->u[mb];
            if (c->slot_of[s->stage * c->cfg->m + mb] != ch)
                continue; /* DualPipe: the other copy's microbatch */
            /* an inference schedule runs forwards alone */
            const char *k = !u->f ? "F" : !u->b && c->backward ? "B" : "";
            if (*k || (s->has_w[mb] && !u->w))
                return ps_errf(err,
                               "rank %d: %s%d.c%d never ran (its gradient "
                               "is missing)",
                               (int)rank, *k ? k : "W", (int)mb, (int)ch);
        }
    }
    double *v = malloc(n * sizeof *v);
    if (!v)
        return ps_errf(err, "out of memory");
    size_t k = 0;
    v[k++] = c->nchunks;
    v[k++] = c->held_peak;
    v[k++] = c->recompute;
    for (int32_t ch = 0; ch < c->nchunks; ch++) {
        slot *s = &c->s[ch];
        size_t np = 0;
        for (int32_t l = 0; l < s->count; l++)
            np += (size_t)mlp_params(&c->model, s->first + l);
        v[k++] = s->stage;
        v[k++] = (double)np;
        for (int32_t l = 0; l < s->count; l++) {
            size_t lp = (size_t)mlp_params(&c->model, s->first + l);
            memcpy(v + k, s->grad[l], lp * sizeof *v);
            k += lp;
        }
    }
    free(c->result);
    c->result = v;
    *data = v;
    *len = n * sizeof *v;
    return PS_OK;
}

static void pl_teardown(void *ctx, int32_t rank)
{
    plive *c = ctx;
    (void)rank;
    for (int32_t ch = 0; c->s && ch < c->nchunks; ch++) {
        slot *s = &c->s[ch];
        for (int32_t mb = 0; s->u && mb < c->cfg->m; mb++) {
            free_unit(c, s, &s->u[mb]);
            free(s->u[mb].a);
            free(s->u[mb].dz);
        }
        for (int32_t l = 0; s->wt && l < s->count; l++)
            free(s->wt[l]);
        free(s->wt);
        free(s->grad);
        free(s->u);
        free(s->has_w);
    }
    free(c->s);
    free(c->slot_of);
    free(c->gbuf);
    free(c->boff);
    free(c->prev);
    free(c->result);
    c->s = NULL;
    c->slot_of = NULL;
    c->gbuf = NULL;
    c->boff = NULL;
    c->prev = NULL;
    c->result = NULL;
}

static const live_ops pipe_live_ops = {
    .setup = pl_setup,
    .reset = pl_reset,
    .send_data = pl_send,
    .recv_len = pl_recv_len,
    .recv_done = pl_recv_done,
    .compute = pipe_live_compute,
    .result = pl_result,
    .teardown = pl_teardown,
};

/* ------------------------------------------------------------------ */
/* The coordinator: the run, the reference gradient, the comparison     */

/* grad_error: the largest difference between a pipeline gradient and the
 * reference, over the largest reference magnitude, every layer of every
 * stage; each replica's stage (after its all-reduce) and, where a stage
 * has two copies (DualPipe), their sum. */
static int compare(plive *c, const live_result *lr, pipe_live *pl, ps_err *err)
{
    const pipe_config *cfg = c->cfg;
    int32_t L = c->model.layers;
    int64_t *off = malloc(((size_t)L + 1) * sizeof *off);
    if (!off)
        return ps_errf(err, "out of memory");
    off[0] = 0;
    for (int32_t l = 0; l < L; l++)
        off[l + 1] = off[l] + mlp_params(&c->model, l);
    double *ref = calloc((size_t)off[L] + 1, sizeof *ref);
    double *got = calloc((size_t)off[L] * (size_t)cfg->dp + 1, sizeof *got);
    int rc =
        ref && got &&
                mlp_full_gradient(&c->model, cfg->dp, cfg->m, off, ref) == 0
            ? PS_OK
            : ps_errf(err, "out of memory for the reference gradient");
    for (int32_t k = 0; k < cfg->p * cfg->dp && rc == PS_OK; k++) {
        int32_t rank = c->rank_of[k];
        const double *v = lr->data[rank];
        size_t n = lr->data_len[rank] / sizeof *v, at = 3;
        if (!v || n < 3) {
            rc = ps_errf(err, "rank %d returned no gradients", (int)rank);
            break;
        }
        pl->held_peak[k] = v[1];
        pl->recompute[k] = v[2];
        for (int32_t ch = 0; ch < (int32_t)v[0] && at + 2 <= n; ch++) {
            int32_t st = (int32_t)v[at];
            size_t np = (size_t)v[at + 1];
            at += 2;
            double *dst = got + (size_t)(k / cfg->p) * (size_t)off[L] +
                          (size_t)off[c->first[st]];
            for (size_t e = 0; e < np && at + e < n; e++)
                dst[e] += v[at + e];
            at += np;
        }
    }
    double scale = 0, diff = 0;
    for (int64_t e = 0; rc == PS_OK && e < off[L]; e++)
        scale = fmax(scale, fabs(ref[e]));
    for (int32_t j = 0; rc == PS_OK && j < cfg->dp; j++)
        for (int64_t e = 0; e < off[L]; e++)
            diff =
                fmax(diff, fabs(got[(size_t)j * (size_t)off[L] + e] - ref[e]));
    pl->grad_error = scale > 0 ? diff / scale : diff;
    free(off);
    free(ref);
    free(got);
    return rc;
}

/* Does any lane run a backward (an inference schedule runs none)? */
static int has_backward(const prog_set *ps)
{
    for (int32_t l = 0; l < ps->nlanes; l++)
        for (int32_t i = 0; i < ps->lanes[l].n; i++) {
            const prog_op *op = &ps->lanes[l].ops[i];
            if (op->type == PROG_COMPUTE &&
                (op->kind == PROG_B || op->kind == PROG_FB_B))
                return 1;
        }
    return 0;
}

int pipe_live_run(const pipe_config *cfg, const sched_spec *spec, prog_set *ps,
                  const int32_t *first, const int32_t *count,
                  const par_log *log, const int32_t *rank_of, double *makespan,
                  ps_err *err)
{
    pipe_live *pl = cfg->live;
    if (cfg->zero)
        return ps_errf(err,
                       "backend 'tcp' reduces gradients with "
                       "all-reduce: ZeRO (zero = %d) is not run live",
                       cfg->zero);
    if (!pl->width || pl->nwidth != cfg->nlayers + 1)
        return ps_errf(err,
                       "backend 'tcp': the MLP needs %d widths (one per "
                       "layer and its output), got %d",
                       (int)cfg->nlayers + 1, (int)pl->nwidth);
    plive c = {
        .cfg = cfg,
        .spec = spec,
        .first = first,
        .count = count,
        .S = sched_nstages(spec->placement, spec->p, spec->v),
        .nchunks = spec->v,
        .nmsg = sched_msg_count(spec),
        .model = {cfg->nlayers, pl->width, pl->seed, pl->rows},
        .ps = ps,
        .log = log,
        .moves = &pl->moves,
        .rank_of = rank_of,
    };
    int32_t n = cfg->p * cfg->dp;
    free(pl->held_peak);
    free(pl->recompute);
    pl->held_peak = calloc((size_t)n, sizeof *pl->held_peak);
    pl->recompute = calloc((size_t)n, sizeof *pl->recompute);
    if (!pl->held_peak || !pl->recompute)
        return ps_errf(err, "out of memory");
    live_cfg lc = {
        .ps = ps,
        .ops = &pipe_live_ops,
        .ctx = &c,
        .iterations = pl->iterations,
        .warmup = pl->warmup,
        .faults = cfg->faults,
        .watchdog = pl->watchdog,
    };
    live_result_free(&pl->run);
    int rc = live_run(&lc, &pl->run, err);
    if (rc == PS_OK && pl->run.worker) { /* a rendezvous worker's copy */
        *makespan = NAN;
        return PS_OK;
    }
    if (rc == PS_OK)
        rc = compare(&c, &pl->run, pl, err);
    if (rc == PS_OK && !has_backward(ps)) /* inference: no gradient */
        pl->grad_error = NAN;
    if (rc == PS_OK)
        *makespan = pl->run.median;
    return rc;
}

void pipe_live_free(pipe_live *pl)
{
    live_result_free(&pl->run);
    free(pl->held_peak);
    free(pl->recompute);
    free(pl->moves.m);
    pl->held_peak = pl->recompute = NULL;
    pl->moves.m = NULL;
    pl->moves.cap = 0;
}
