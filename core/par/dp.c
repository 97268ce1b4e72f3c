/* The dp pass (par/dp.h): the communication lanes, the finalize
 * reductions, the exposed time and the static memory; the compute lanes'
 * side is par/dp_lane.c. Everything here runs once per step before the
 * engine, O(ops). */
#include "par/dp_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"
#include "coll/coll.h"

/* Everything dp_lower keeps while it works. */
typedef struct dp_work {
    plan *plans;         /* per pipeline rank */
    int32_t *ready_base; /* per pipeline rank: its first signal */
    int32_t *comm;       /* per simulated rank: its communication lane, or
                            -1 */
    int32_t *lanes, *ranks, *group; /* d (or 2) each: one collective's */
    int32_t *glanes, *base, *sub;   /* d, d, 2d: ZeRO-3's gather lanes,
                                       signal bases, subgroups' scratch */
    dp_group g;                     /* the group of lanes, ranks, ... */
    fsdp_events *ev;                /* per pipeline rank, with fsdp */
    int32_t *gather;                /* per simulated rank: its ZeRO-3
                                       all-gather lane, or -1 */
    int32_t *ready;              /* 3 most + 3v + most: signals and scratch */
    int32_t *last;               /* v + 1 */
    uint8_t *sync;               /* per pipeline rank */
    coll_forks forks;            /* communication lanes' forks, reused */
    int32_t most;                /* the most buckets of a plan */
    int32_t bad_rank, bad_stage; /* plan_buckets' -2: whose plan was cut
                                    into too many buckets */
} dp_work;

static void work_free(dp_work *w, int32_t p)
{
    coll_forks_free(&w->forks);
    for (int32_t r = 0; w->plans && r < p; r++)
        limit_free(w->plans[r].b);
    for (int32_t r = 0; w->ev && r < p; r++)
        par_fsdp_events_free(&w->ev[r]);
    free(w->ev);
    free(w->gather);
    free(w->glanes);
    free(w->base);
    free(w->sub);
    free(w->plans);
    free(w->ready_base);
    free(w->comm);
    free(w->lanes);
    free(w->ranks);
    free(w->group);
    limit_free(w->ready);
    free(w->last);
    free(w->sync);
}

/* Ready signals per (instance, pipeline rank r): one per bucket, with
 * fsdp one per reduce-scatter of every backward. */
static int32_t nready(const dp_config *c, const dp_work *w, int32_t r)
{
    return c->fsdp ? w->ev[r].nred : w->plans[r].n;
}

/* Signals per (instance, pipeline rank r): the ready ones, synced,
 * updated, and with pg each forward position's gathered and reached, or
 * with fsdp each all-gather's gathered and started. */
static int32_t signal_stride(const dp_config *c, const dp_work *w, int32_t r)
{
    int32_t n = w->plans[r].n;
    if (c->fsdp)
        return nready(c, w, r) + 2 + 2 * w->ev[r].ngat;
    return n + 2 + (c->pg ? 2 * n : 0);
}

static int32_t signal_base(const dp_config *c, const dp_work *w, int32_t i,
                           int32_t r)
{
    return w->ready_base[r] + i * signal_stride(c, w, r);
}

/* The dp_config of st (par/dp.h's view of its settings). */
static void configure(dp_config *c, const par_step *st, const uint8_t *sync)
{
    const par_sim *sim = st->sim;
    const par_layout *L = st->layout;
    *c = (dp_config){0};
    c->st = st;
    c->p = sim->p;
    c->v = st->v;
    c->n = sim->n;
    c->d = sim->unfolded[PAR_DP] * sim->unfolded[PAR_CP];
    c->shard = L->s.shard_group > 0 ? L->s.shard_group : c->d;
    c->stage = L->s.shard;
    c->zero = c->stage >= PAR_SHARD_OPTIMIZER && c->d > 1;
    c->fsdp = c->stage >= PAR_SHARD_GRADS && c->d > 1;
    c->reshard = st->dp.reshard > 0 ? st->dp.reshard : c->shard;
    /* Megatron asserts --overlap-grad-reduce and the distributed optimizer
     * for --overlap-param-gather */
    c->pg =
        st->dp.overlap_param_gather && c->zero && st->dp.overlap && !c->fsdp;
    c->pg_start = st->dp.param_gather_start;
    c->bucketed = st->dp.bucketed;
    c->overlap = st->dp.overlap;
    c->optimizer_seconds = st->dp.optimizer_seconds;
    c->first = st->first;
    c->count = st->count;
    c->layer_params = st->layer_params;
    c->layer_bwd = st->layer_bwd;
    c->grad_bytes = st->grad_bytes;
    c->weight_bytes = st->weight_bytes;
    c->bucket_bytes = st->dp.bucket_bytes;
    c->first_bucket_bytes = st->dp.first_bucket_bytes;
    if (c->fsdp) { /* DeepSpeed's IPG buckets have no smaller first one and
                      know no pipeline; ZeRO-3's units are the layers */
        c->bucketed = PAR_BUCKET_ALL;
        c->first_bucket_bytes = c->bucket_bytes;
        c->per_layer = c->stage == PAR_SHARD_PARAMS;
        if (c->per_layer)
            c->bucket_bytes = c->first_bucket_bytes = INFINITY;
    }
    c->ranks_per_node = par_dp_ranks_per_node(st);
    c->sync = sync;
}

/* Does pipeline rank r have a reduction to wait for (data-parallel peers,
 * or a finalize reduction with another rank)? */
static int rank_synced(const par_step *st, int32_t d, int32_t r)
{
    for (int32_t f = 0; f < st->nfinalize && d == 1; f++) {
        const par_finalize *x = &st->finalize[f];
        if (x->r0 != x->r1 && (x->r0 == r || x->r1 == r))
            return 1;
    }
    return d > 1;
}

static void sync_ranks(const par_step *st, int32_t d, uint8_t *sync)
{
    for (int32_t r = 0; r < st->sim->p; r++)
        sync[r] = (uint8_t)rank_synced(st, d, r);
}

/* Does the step have any reduction (the pass then needs programs as
 * arrays)? */
static int needs_sync(const par_step *st)
{
    int32_t d = st->sim->unfolded[PAR_DP] * st->sim->unfolded[PAR_CP];
    for (int32_t f = 0; f < st->nfinalize; f++)
        if (st->finalize[f].r0 != st->finalize[f].r1)
            return 1;
    return d > 1;
}

int32_t par_dp_ranks_per_node(const par_step *st)
{
    const par_sim *sim = st->sim;
    unsigned mask = PAR_BIT(PAR_DP) | PAR_BIT(PAR_CP);
    int32_t d = sim->unfolded[PAR_DP] * sim->unfolded[PAR_CP];
    if (st->gpus_per_node < 2 || d < 2)
        return 0;
    int32_t *inst = malloc((size_t)d * 2 * sizeof *inst);
    if (!inst)
        return 0; /* one ring per group: the conservative model */
    int32_t *group = inst + d, rpn = -1;
    for (int32_t i = 0; i < sim->n && rpn != 0; i++) {
        if (!par_sim_group_head(sim, mask, i))
            continue;
        par_sim_group(sim, mask, i, inst);
        for (int32_t r = 0; r < sim->p && rpn != 0; r++) {
            for (int32_t j = 0; j < d; j++)
                group[j] = sim->rank_of[inst[j] * sim->p + r];
            int32_t g = coll_ranks_per_node(st->gpus_per_node, group, d);
            rpn = rpn < 0 || rpn == g ? g : 0;
        }
    }
    free(inst);
    return rpn < 0 ? 0 : rpn;
}

/* Pushes op onto lane. */
static int push_op(prog_set *ps, int32_t lane, prog_op op, ps_err *err)
{
    return prog_push(ps, lane, &op) ? ps_errf(err, "out of memory") : PS_OK;
}

/* The group of instance i over dp and cp, for pipeline rank r: its
 * communication lanes and cluster ranks in w->lanes, w->ranks. */
static void group_lanes(const dp_config *c, dp_work *w, int32_t i, int32_t r)
{
    const par_sim *sim = c->st->sim;
    par_sim_group(sim, PAR_BIT(PAR_DP) | PAR_BIT(PAR_CP), i, w->group);
    for (int32_t j = 0; j < c->d; j++) {
        w->lanes[j] = w->comm[w->group[j] * c->p + r];
        w->ranks[j] = sim->rank_of[w->group[j] * c->p + r];
        w->base[j] = signal_base(c, w, w->group[j], r);
        w->glanes[j] = w->gather ? w->gather[w->group[j] * c->p + r] : -1;
    }
    w->g = (dp_group){c->d,    w->lanes, w->glanes,    w->ranks,
                      w->base, w->sub,   w->sub + c->d};
}

/* With pg, the previous step's all-gathers of rank r's group (w->lanes),
 * bucket by bucket in the forward's order (order): a chunk's buckets back
 * to back once the chunk is dispatched (dispatch_points: the signal
 * reached of its first bucket; with PAR_PG_STEP the first bucket of all
 * goes alone, par_dp_dispatch_start), then each bucket's signal
 * gathered. */
static int lower_gathers(const dp_config *c, par_step *st, dp_work *w,
                         int32_t r, const int32_t *order, ps_err *err)
{
    const plan *pl = &w->plans[r];
    int rc = PS_OK;
    for (int32_t q = 0; q < pl->n && rc == PS_OK; q++) {
        for (int32_t j = 0; par_dp_dispatch_start(c, pl, order, q) && j < c->d;
             j++) {
            int32_t base = signal_base(c, w, w->group[j], r);
            if (push_op(st->ps, w->lanes[j],
                        prog_signal(PROG_WAIT, base + 2 * pl->n + 2 + q), err))
                return PS_ERR;
        }
        rc = par_dp_collective(
            c, st, &w->forks, &w->g, w->lanes, COLL_ALLGATHER,
            pl->b[order[q]].params * c->weight_bytes, c->shard, order[q], err);
        for (int32_t j = 0; j < c->d && rc == PS_OK; j++)
            rc = push_op(
                st->ps, w->lanes[j],
                prog_signal(PROG_SIGNAL,
                            signal_base(c, w, w->group[j], r) + pl->n + 2 + q),
                err);
    }
    return rc;
}

/* Rank r's ZeRO-2/3 collectives in every group (par/fsdp.c). */
static int lower_fsdp(const dp_config *c, par_step *st, dp_work *w, int32_t r,
                      ps_err *err)
{
    unsigned mask = PAR_BIT(PAR_DP) | PAR_BIT(PAR_CP);
    int rc = PS_OK;
    for (int32_t i = 0; i < c->n && rc == PS_OK; i++) {
        if (!par_sim_group_head(st->sim, mask, i))
            continue;
        group_lanes(c, w, i, r);
        rc = par_fsdp_lower_group(c, st, &w->forks, &w->g, &w->plans[r],
                                  &w->ev[r], err);
    }
    return rc;
}

/* Rank r's data-parallel collectives in every group: with pg the
 * all-gathers first, then each bucket's reduction once every instance's
 * backward made it. */
static int lower_buckets(const dp_config *c, par_step *st, dp_work *w,
                         int32_t r, ps_err *err)
{
    const plan *pl = &w->plans[r];
    int32_t *scratch = w->ready + 3 * w->most, *order = scratch + 2 * c->v;
    unsigned mask = PAR_BIT(PAR_DP) | PAR_BIT(PAR_CP);
    int rc = PS_OK;
    if (c->pg)
        par_dp_forward_order(&st->ps->lanes[r], pl, c->v, scratch,
                             scratch + c->v, order);
    for (int32_t i = 0; i < c->n && rc == PS_OK; i++) {
        if (!par_sim_group_head(st->sim, mask, i))
            continue;
        group_lanes(c, w, i, r);
        if (c->pg)
            rc = lower_gathers(c, st, w, r, order, err);
        for (int32_t k = 0; k < pl->n && rc == PS_OK; k++) {
            for (int32_t j = 0; j < c->d && rc == PS_OK; j++)
                rc = push_op(st->ps, w->lanes[j],
                             prog_signal(PROG_WAIT,
                                         signal_base(c, w, w->group[j], r) + k),
                             err);
            if (rc == PS_OK)
                rc = par_dp_collective(
                    c, st, &w->forks, &w->g, w->lanes,
                    c->zero ? COLL_REDUCE_SCATTER : COLL_ALLREDUCE,
                    pl->b[k].bytes, c->zero ? c->shard : c->d, k, err);
        }
    }
    return rc;
}

/* Finalize reduction f on every instance: its two ranks' communication
 * lanes, once each has its gradients (with no data-parallel peers they
 * wait for their ranks' buckets, raised at the backward's end). */
static int lower_finalize(const dp_config *c, par_step *st, dp_work *w,
                          const par_finalize *f, ps_err *err)
{
    int rc = PS_OK;
    for (int32_t i = 0; i < c->n && rc == PS_OK; i++) {
        const int32_t rr[2] = {f->r0, f->r1};
        for (int x = 0; x < 2 && rc == PS_OK; x++) {
            w->lanes[x] = w->comm[i * c->p + rr[x]];
            w->ranks[x] = st->sim->rank_of[i * c->p + rr[x]];
            for (int32_t k = 0; c->d == 1 && k < w->plans[rr[x]].n; k++)
                if ((rc = push_op(st->ps, w->lanes[x],
                                  prog_signal(PROG_WAIT,
                                              signal_base(c, w, i, rr[x]) + k),
                                  err)))
                    break;
        }
        if (rc == PS_OK)
            rc = par_dp_coll(st, &w->forks, w->lanes, w->ranks, 2, 0,
                             COLL_ALLREDUCE, f->bytes, -1, err);
    }
    return rc;
}

/* Does the optimizer step end with an all-gather of the updated shards
 * (ZeRO-1 and 2 without pg; ZeRO-3 gathers before each use)? */
static int gathers_updated(const dp_config *c)
{
    return c->zero && !c->pg && c->stage < PAR_SHARD_PARAMS;
}

/* Rank q's end of the sync on every instance: SIGNAL(synced), then with
 * ZeRO-1/2 (not pg) the wait for the update and the all-gathers of the
 * updated shards. */
static int lower_synced(const dp_config *c, par_step *st, dp_work *w, int32_t q,
                        ps_err *err)
{
    const plan *pl = &w->plans[q];
    int32_t nr = nready(c, w, q);
    int rc = PS_OK;
    for (int32_t i = 0; i < c->n && rc == PS_OK; i++) {
        int32_t lane = w->comm[i * c->p + q], base = signal_base(c, w, i, q);
        rc = push_op(st->ps, lane, prog_signal(PROG_SIGNAL, base + nr), err);
        if (rc == PS_OK && gathers_updated(c))
            rc = push_op(st->ps, lane, prog_signal(PROG_WAIT, base + nr + 1),
                         err);
    }
    unsigned mask = PAR_BIT(PAR_DP) | PAR_BIT(PAR_CP);
    for (int32_t i = 0; gathers_updated(c) && i < c->n && rc == PS_OK; i++) {
        if (!par_sim_group_head(st->sim, mask, i))
            continue;
        group_lanes(c, w, i, q);
        for (int32_t k = 0; k < pl->n && rc == PS_OK; k++)
            rc = par_dp_collective(
                c, st, &w->forks, &w->g, w->lanes, COLL_ALLGATHER,
                pl->b[k].params * c->weight_bytes, c->shard, k, err);
    }
    return rc;
}

/* Bucket plans per pipeline rank, in the order the rank's last backwards
 * run (the same in every instance), and the work arrays sized by them.
 * -1 out of memory (or past --max-memory, which the plans are charged
 * to), -2 when a plan passes DP_MAX_BUCKETS (w->bad_rank, bad_stage). */
static int plan_buckets(const dp_config *c, const prog_set *ps, dp_work *w)
{
    int32_t p = c->p, nsim = c->n * p, d = c->d > 2 ? c->d : 2;
    w->plans = calloc((size_t)p, sizeof *w->plans);
    w->ready_base = calloc((size_t)p, sizeof *w->ready_base);
    w->comm = malloc((size_t)nsim * sizeof *w->comm);
    w->lanes = malloc((size_t)d * sizeof *w->lanes);
    w->ranks = malloc((size_t)d * sizeof *w->ranks);
    w->group = malloc((size_t)d * sizeof *w->group);
    w->last = malloc(((size_t)c->v + 1) * sizeof *w->last);
    w->glanes = malloc((size_t)d * sizeof *w->glanes);
    w->base = malloc((size_t)d * sizeof *w->base);
    w->sub = malloc((size_t)d * 2 * sizeof *w->sub);
    w->ev = c->fsdp ? calloc((size_t)p, sizeof *w->ev) : NULL;
    if (!w->plans || !w->ready_base || !w->comm || !w->lanes || !w->ranks ||
        !w->group || !w->last || !w->glanes || !w->base || !w->sub ||
        (c->fsdp && !w->ev))
        return -1;
    for (int32_t r = 0; r < p; r++) {
        const prog_lane *lane = &ps->lanes[r];
        par_dp_last_backwards(lane, c->v, w->last);
        for (int32_t i = 0; i < lane->n; i++) {
            const prog_op *op = &lane->ops[i];
            int rc = par_dp_is_last_backward(lane, w->last, i)
                         ? par_dp_plan_chunk(c, r, op->stage, op->chunk,
                                             &w->plans[r])
                         : 0;
            if (rc == -2) {
                w->bad_rank = r;
                w->bad_stage = op->stage;
            }
            if (rc)
                return rc;
        }
        if (w->plans[r].n > w->most)
            w->most = w->plans[r].n;
        int rc =
            c->fsdp ? par_fsdp_events(c, lane, &w->plans[r], &w->ev[r]) : 0;
        if (rc)
            return rc;
    }
    /* ready, then with pg gathered and reached: most each; and
     * par_dp_rewrite_lane's scratch, 3v + most */
    w->ready = limit_malloc(((size_t)3 * w->most + 3 * c->v + w->most + 1) *
                            sizeof *w->ready);
    return w->ready ? 0 : -1;
}

/* Signals and the rewritten compute lanes of every simulated rank. */
static int rewrite_lanes(const dp_config *c, prog_set *ps, dp_work *w)
{
    int32_t most = w->most;
    int32_t *gathered = w->ready + most, *reached = w->ready + 2 * most;
    for (int32_t r = 0; r < c->p; r++) {
        w->ready_base[r] = ps->nsignals;
        ps->nsignals += c->n * signal_stride(c, w, r);
    }
    for (int32_t i = 0; c->fsdp && i < c->n; i++)
        for (int32_t r = 0; r < c->p; r++)
            if (par_fsdp_rewrite_lane(c, &ps->lanes[i * c->p + r], &w->plans[r],
                                      &w->ev[r], signal_base(c, w, i, r), r)) {
                prog_note_need(ps, 4 * (w->ev[r].nred + w->ev[r].ngat));
                return -1;
            }
    for (int32_t i = 0; !c->fsdp && i < c->n; i++)
        for (int32_t r = 0; r < c->p; r++) {
            int32_t nb = w->plans[r].n, base = signal_base(c, w, i, r);
            for (int32_t k = 0; k < nb; k++) {
                w->ready[k] = base + k;
                gathered[k] = base + nb + 2 + k;
                reached[k] = base + 2 * nb + 2 + k;
            }
            if (par_dp_rewrite_lane(c, &ps->lanes[i * c->p + r], &w->plans[r],
                                    w->ready, base + nb, base + nb + 1, r,
                                    w->last, c->pg ? gathered : NULL,
                                    c->pg ? reached : NULL,
                                    w->ready + 3 * most)) {
                prog_note_need(ps, 2 * w->plans[r].n); /* --max-memory */
                return -1;
            }
        }
    return 0;
}

/* The refusal of a bucket size that cuts pipeline rank r's gradients
 * (stage's, at least) into more than DP_MAX_BUCKETS buckets. */
static int too_many(const dp_config *c, int32_t r, int32_t stage, ps_err *err)
{
    double g = 0;
    for (int32_t i = 0; i < c->count[stage]; i++)
        g += c->layer_params[c->first[stage] + i] * c->grad_bytes;
    return ps_errf(err,
                   "field 'grad_sync.bucket' must be a bucket size for the "
                   "model, got %.6g bytes: it cuts stage %d's %.3g GB of "
                   "gradients (pipeline rank %d) into %.3g buckets, more "
                   "than %d (sizes are bytes: \"25 MB\" is PyTorch DDP's, "
                   "40M parameters Megatron-LM's)",
                   c->bucket_bytes, (int)stage, g / 1e9, (int)r,
                   ceil(g / c->bucket_bytes), DP_MAX_BUCKETS);
}

/* The pipeline rank after whose collectives rank q's sync ends: q, or
 * the later rank of a finalize reduction q takes part in. */
static int32_t sync_end(const par_step *st, int32_t q)
{
    int32_t at = q;
    for (int32_t f = 0; f < st->nfinalize; f++) {
        const par_finalize *x = &st->finalize[f];
        int32_t hi = x->r0 > x->r1 ? x->r0 : x->r1;
        if ((x->r0 == q || x->r1 == q) && x->r0 != x->r1 && hi > at)
            at = hi;
    }
    return at;
}

/* The communication of every rank, rank by rank: its buckets, the
 * finalize reductions its rank completes, and the end of the sync of
 * each rank that has all its reductions then. Without finalize
 * reductions each rank's sync ends right after its buckets. */
static int lower_comm(const dp_config *c, par_step *st, dp_work *w, ps_err *err)
{
    int rc = PS_OK;
    for (int32_t r = 0; r < c->p && rc == PS_OK; r++) {
        if (c->d > 1)
            rc = c->fsdp ? lower_fsdp(c, st, w, r, err)
                         : lower_buckets(c, st, w, r, err);
        for (int32_t f = 0; f < st->nfinalize && rc == PS_OK; f++) {
            const par_finalize *x = &st->finalize[f];
            if (x->r0 != x->r1 && (x->r0 > x->r1 ? x->r0 : x->r1) == r)
                rc = lower_finalize(c, st, w, x, err);
        }
        for (int32_t q = 0; q <= r && rc == PS_OK; q++)
            if (w->sync[q] && sync_end(st, q) == r)
                rc = lower_synced(c, st, w, q, err);
    }
    return rc;
}

static int dp_lower(par_step *st, ps_err *err)
{
    const par_sim *sim = st->sim;
    int32_t p = sim->p, d = sim->unfolded[PAR_DP] * sim->unfolded[PAR_CP];
    if (!needs_sync(st) && !(st->dp.optimizer_seconds > 0))
        return PS_OK; /* nothing to add: no OPT op either */
    if (d > 1 && !(st->dp.bucket_bytes > 0 && st->dp.first_bucket_bytes > 0))
        return ps_errf(err, "grad_sync: bucket sizes must be positive");
    if (st->ps->nlanes < sim->n * p)
        return ps_errf(err, "dp: expected %d compute lanes, found %d",
                       (int)(sim->n * p), (int)st->ps->nlanes);
    dp_work w = {0};
    dp_config c;
    int rc = PS_OK;
    w.sync = malloc((size_t)p);
    if (w.sync) {
        sync_ranks(st, d, w.sync);
        configure(&c, st, w.sync);
    }
    int planned = w.sync ? plan_buckets(&c, st->ps, &w) : -1;
    if (planned == -2)
        rc = too_many(&c, w.bad_rank, w.bad_stage, err);
    else if (planned == -3)
        rc = ps_errf(err,
                     "zero = %d is not modelled with a split backward or "
                     "DualPipe's overlapped F&B (schedule '%s'): its "
                     "reductions follow each backward as one",
                     c.stage, sched_name(st->sched.kind));
    else if (planned || rewrite_lanes(&c, st->ps, &w))
        rc = ps_errf(err, "out of memory");
    /* communication lanes, in simulated-rank order */
    for (int32_t k = 0; rc == PS_OK && k < sim->n * p; k++) {
        w.comm[k] = -1;
        if (w.sync[k % p] &&
            (w.comm[k] = prog_add_lane(st->ps, sim->rank_of[k])) < 0)
            rc = ps_errf(err, "out of memory");
    }
    /* ZeRO-3's all-gather lanes (a stream of their own), after every
     * communication lane (dp_exposed counts those by position) */
    if (rc == PS_OK && c.fsdp && c.stage == PAR_SHARD_PARAMS &&
        !(w.gather = malloc((size_t)sim->n * p * sizeof *w.gather)))
        rc = ps_errf(err, "out of memory");
    for (int32_t k = 0; rc == PS_OK && w.gather && k < sim->n * p; k++)
        if ((w.gather[k] = prog_add_lane(st->ps, sim->rank_of[k])) < 0)
            rc = ps_errf(err, "out of memory");
    if (rc == PS_OK)
        rc = lower_comm(&c, st, &w, err);
    work_free(&w, p);
    return rc;
}

/* After the engine ran: per compute lane with a sync, the seconds from
 * its WAIT(synced) to its OPT (the lane ends WAIT(synced), OPT[,
 * SIGNAL(updated)]), plus the forward's waits for overlap_param_gather's
 * all-gathers, plus with ZeRO-1 the all-gather that follows the
 * optimizer step. */
static void dp_exposed(const par_step *st, double *exposed)
{
    const par_sim *sim = st->sim;
    int32_t p = sim->p, n = sim->n * p;
    int32_t d = sim->unfolded[PAR_DP] * sim->unfolded[PAR_CP];
    /* ZeRO-1 and 2 end the lane with SIGNAL(updated) */
    int zero = (st->layout->s.shard == PAR_SHARD_OPTIMIZER ||
                st->layout->s.shard == PAR_SHARD_GRADS) &&
               d > 1;
    const prog_set *ps = st->ps;
    int32_t comm = n; /* communication lanes follow, one per synced rank */
    if (!needs_sync(st))
        return;
    for (int32_t l = 0; l < n; l++) {
        const prog_lane *lane = &ps->lanes[l];
        if (!rank_synced(st, d, l % p))
            continue;
        const prog_lane *cl = &ps->lanes[comm++];
        if (lane->n < 2)
            continue;
        int32_t opt = lane->n - 1 - (zero ? 1 : 0);
        const prog_op *o = &lane->ops[opt], *w = &lane->ops[opt - 1];
        if (isnan(exposed[l]))
            exposed[l] = 0;
        exposed[l] += o->t_start - w->t_start;
        for (int32_t i = 0; i < lane->n; i++)
            if (lane->ops[i].type == PROG_WAIT &&
                lane->ops[i].tag == DP_TAG_GATHER)
                exposed[l] += lane->ops[i].t_end - lane->ops[i].t_start;
        double end = cl->n ? cl->ops[cl->n - 1].t_end : o->t_end;
        if (zero && end > o->t_end)
            exposed[l] += end - o->t_end;
    }
}

/* The elements the distributed optimizer pads model stage s's buckets
 * with (par_dp_chunk_pad). The chunk matters only for pipeline rank 0's
 * first one (chunk_bucketed: Megatron cuts it alone into buckets), so it
 * is 0 or 1: whether a stage before s sits on rank 0; O(s) on rank 0's
 * stages only, linear in the stages in all. */
static double stage_pad(const par_step *st, int32_t s, int32_t r)
{
    dp_config c;
    configure(&c, st, NULL);
    if (!c.zero || c.fsdp)
        return 0;
    int32_t chunk = 0;
    for (int32_t q = 0; r == 0 && q < s && !chunk; q++)
        chunk = sched_place_rank(st->sched.placement, st->sched.place,
                                 st->sim->p, q) == 0;
    return par_dp_chunk_pad(&c, r, s, chunk);
}

/* Static memory: weights, gradients and optimizer state of each
 * simulated rank's parameters (ZeRO paper accounting, Rajbhandari et al.
 * 2020: 2 + 2 + 12 bytes per parameter for bf16 mixed precision with
 * Adam), each stage's shards of them (par_fsdp_per_param), with ZeRO-1
 * the padding of its buckets in the gradient and parameter buffers
 * (stage_pad), and with ZeRO-2/3 the buffers beyond (par_fsdp_buffers)
 * once per rank. DualPipe holds each stage twice: the second copy on rank
 * p - 1 - s. */
static void dp_memory(const par_step *st, double *rank_static)
{
    const par_sim *sim = st->sim;
    const par_layout *L = st->layout;
    int32_t shard = L->s.shard_group > 0 ? L->s.shard_group : L->s.dp * L->s.cp;
    int32_t reshard = st->dp.reshard > 0 ? st->dp.reshard : shard;
    double per_param = par_fsdp_per_param(st, L->s.shard, shard);
    int32_t p = sim->p;
    for (int32_t r = 0; r < p && L->s.shard >= PAR_SHARD_GRADS; r++) {
        double held = par_fsdp_buffers(st, L->s.shard, shard, reshard, r);
        for (int32_t i = 0; i < sim->n; i++)
            rank_static[sim->rank_of[i * p + r]] += held;
    }
    for (int32_t s = 0; s < st->nstages; s++) {
        int32_t r =
            sched_place_rank(st->sched.placement, st->sched.place, p, s);
        /* and the layers' own static bytes (pipe_layer.static_bytes) */
        double stage_static =
            st->stage_params[s] * per_param +
            stage_pad(st, s, r) * (st->weight_bytes + st->grad_bytes);
        for (int32_t l = st->first[s];
             st->layer_static && l < st->first[s] + st->count[s]; l++)
            stage_static += st->layer_static[l];
        for (int32_t i = 0; i < sim->n; i++) {
            rank_static[sim->rank_of[i * p + r]] += stage_static;
            if (st->sched.kind == SCHED_DUALPIPE)
                rank_static[sim->rank_of[i * p + p - 1 - s]] += stage_static;
        }
    }
}

static int dp_arrays(const par_step *st)
{
    return needs_sync(st);
}

const par_pass par_dp_pass = {
    .name = "dp",
    .arrays = dp_arrays,
    .lower = dp_lower,
    .memory = dp_memory,
    .exposed = dp_exposed,
};
