/* Pipeline generators: a lane walks its rank's order (closed forms of
 * sched/sched.c's order_gpipe, order_1f1b and order_interleaved) step by step
 * as sched/lower.c's lower_rank does: before each step one batch with the
 * previous step's sends and this step's receives (for 1F1B's warm-up and
 * cool-down the sends and receives alone, as Megatron's send_forward /
 * recv_forward), then the step's compute ops. Channels: the forward
 * messages across boundary b (stage b to b + 1) are channel b, the
 * backward ones channel S - 1 + b; every order sends and receives them in
 * microbatch order, so the k-th send meets the k-th receive. */
#include "sched/gen_pipe.h"

#include <string.h>

#include "base/limit.h"
#include "sim/gen.h"

typedef struct act {
    uint8_t kind;   /* PROG_F or PROG_B */
    int32_t st, mb; /* st: its model stage, chunk p + rank (pipe_next's;
                       flat_next's lanes have one, their rank) */
} act;

/* Lane cursor: the step acts[i .. end), the previous one acts[prev .. i),
 * the next compute op acts[j], and where in the step the lane is; a step
 * has one action or two (an interleaved F/B pair), kept here so that each
 * is computed once: cur[] of this step, old[] of the previous one. */
typedef struct pstate {
    int32_t prev, i, end, j;
    int32_t phase; /* BATCH, SECOND (the receives of a split batch), OPS */
    act old[2], cur[2];
    /* the action after the step, computed to see whether it joins it
     * (interleaved): action next_idx when have_next */
    act next;
    int32_t next_idx;
    uint8_t have_next;
    /* set on the first call (the state starts zeroed): the lane's
     * warm-up length */
    int32_t warm;
    uint8_t init;
    uint8_t opt_done; /* the optimizer step is out */
} pstate;

enum { BATCH, SECOND, OPS };

/* The ops a stage's actions make, but for the microbatch: its F and B
 * compute ops (sched/lower.c's unit_cost without W or checkpointing) and
 * sched/lower.c's unit_transfer on the loop placement, by [B][send]: F's
 * receive and send, B's receive and send, has[] 0 where there is none. The
 * peer is stage st + 1 (on the next rank) for a forward's send and a
 * backward's receive, stage st - 1 (on the previous rank) otherwise; the
 * message crosses boundary b, the lower of the two stages, on channel b
 * (forward) or S - 1 + b (backward). Built once per run (O(p v)), so a
 * step copies ops instead of computing them: this runs once per op. */
typedef struct stage_ops {
    prog_op comp[2];
    prog_op xfer[4];
    uint8_t has[4];
} stage_ops;

typedef struct pipe_gen {
    const sched_spec *s;
    int32_t n;      /* actions per rank: 2 m v */
    int32_t S;      /* stages: p v */
    double opt;     /* seconds of the optimizer step; 0: none */
    stage_ops *tab; /* S entries */
} pipe_gen;

static int32_t cluster_rank(const sched_spec *s, int32_t r)
{
    return s->rank_of ? s->rank_of[r] : r;
}

static void stage_ops_of(const sched_spec *s, int32_t st, uint8_t send_flags,
                         stage_ops *t)
{
    int32_t S = s->p * s->v, r = st % s->p;
    int32_t next = cluster_rank(s, r + 1 < s->p ? r + 1 : 0);
    int32_t prev = cluster_rank(s, r > 0 ? r - 1 : s->p - 1);
    const sched_stage *c = &s->stages[st];
    memset(t, 0, sizeof *t); /* padding too: tests compare ops bytewise */
    for (int k = 0; k < 2; k++) {
        int f = k == 0;
        prog_op *o = &t->comp[k];
        o->seconds = f ? c->fwd : c->bwd + c->wgt;
        o->mem = f ? c->act_bytes : -c->act_bytes;
        o->stage = st;
        o->mb = 0;
        o->chunk = (int16_t)(st / s->p);
        o->type = PROG_COMPUTE;
        o->kind = (uint8_t)(f ? PROG_F : PROG_B);
    }
    for (int x = 0; x < 4; x++) {
        int fwd = x < 2, send = x & 1, up = fwd == send;
        int32_t peer_st = up ? st + 1 : st - 1;
        if (s->p == 1 || peer_st < 0 || peer_st >= S)
            continue;
        int32_t b = up ? st : peer_st;
        prog_op *o = &t->xfer[x];
        o->bytes = s->stages[b].out_bytes;
        o->msg = (fwd ? 0 : S - 1) + b;
        o->peer = up ? next : prev;
        o->tag = -1;
        o->type = (uint8_t)(send ? PROG_SEND : PROG_RECV);
        o->kind = (uint8_t)(fwd ? PROG_F : PROG_B);
        o->flags = send ? send_flags : 0;
        t->has[x] = 1;
    }
}

/* Megatron's get_schedule_table (sched/sched.c virtual_mb). */
static inline void virtual_mb(const sched_spec *s, int32_t r, int32_t k,
                              int forward, act *a)
{
    int32_t pv = s->p * s->v, in = k % pv;
    int32_t chunk = forward ? in / s->p : s->v - 1 - in / s->p;
    a->st = chunk * s->p + r;
    a->mb = k / pv * s->p + in % s->p;
}

/* The warm-up length of rank r: 1F1B's min(p - r - 1, m), interleaved's
 * min(2 (p - r - 1) + (v - 1) p, m v) (Megatron's
 * get_num_warmup_microbatches); 0 for GPipe. */
static int32_t warm_of(const sched_spec *s, int32_t r)
{
    if (s->kind == SCHED_1F1B)
        return s->p - r - 1 < s->m ? s->p - r - 1 : s->m;
    if (s->kind != SCHED_INTERLEAVED)
        return 0;
    int32_t warm = 2 * (s->p - r - 1) + (s->v - 1) * s->p, total = s->m * s->v;
    return warm > total ? total : warm;
}

/* Action idx of the order of the rank whose warm-up is warm, and whether
 * it joins the step of the action before it (interleaved's steady F/B
 * pairs). */
static inline act action(const sched_spec *s, int32_t r, int32_t warm,
                         int32_t idx, int *join)
{
    act a = {PROG_F, r, 0};
    int32_t m = s->m;
    *join = 0;
    if (s->kind == SCHED_GPIPE) {
        a.kind = idx < m ? PROG_F : PROG_B;
        a.mb = idx < m ? idx : idx - m;
    } else if (s->kind == SCHED_1F1B) {
        int32_t steady = m - warm;
        if (idx < warm) {
            a.mb = idx;
        } else if (idx < warm + 2 * steady) {
            int32_t t = idx - warm;
            a.kind = t & 1 ? PROG_B : PROG_F;
            a.mb = t & 1 ? t / 2 : warm + t / 2;
        } else {
            a.kind = PROG_B;
            a.mb = idx - warm - steady;
        }
    } else { /* interleaved */
        int32_t total = m * s->v;
        if (idx < warm) {
            virtual_mb(s, r, idx, 1, &a);
        } else if (idx < 2 * total - warm) {
            int32_t t = idx - warm;
            if (t & 1) {
                a.kind = PROG_B;
                virtual_mb(s, r, t / 2, 0, &a);
                *join = 1;
            } else {
                virtual_mb(s, r, t / 2 + warm, 1, &a);
            }
        } else {
            a.kind = PROG_B;
            virtual_mb(s, r, idx - total, 0, &a);
        }
    }
    return a;
}

/* The SEND of a's output (send) or the RECV of its input into *op, from
 * the stage's table; 0 when there is none. */
static inline int transfer(const pipe_gen *pg, const act *a, int send,
                           prog_op *op)
{
    const stage_ops *t = &pg->tab[a->st];
    int x = (a->kind == PROG_B) * 2 + send;
    if (!t->has[x])
        return 0;
    *op = t->xfer[x];
    op->mb = a->mb;
    return 1;
}

/* The batch before step [i, end) into ops: sends of [prev, i), receives
 * of [i, end); its size, *sends of them sends. A step has one action or
 * two. */
static inline int batch(const pipe_gen *pg, const pstate *p, prog_op *ops,
                        int *sends)
{
    int k = 0, nold = p->i - p->prev, ncur = p->end - p->i;
    if (nold > 0)
        k += transfer(pg, &p->old[0], 1, &ops[k]);
    if (nold > 1)
        k += transfer(pg, &p->old[1], 1, &ops[k]);
    *sends = k;
    if (ncur > 0)
        k += transfer(pg, &p->cur[0], 0, &ops[k]);
    if (ncur > 1)
        k += transfer(pg, &p->cur[1], 0, &ops[k]);
    return k;
}

static inline void mark_batch(prog_op *ops, int n)
{
    for (int x = 0; x + 1 < n; x++)
        ops[x].flags |= PROG_BATCH;
}

static int32_t pipe_rank(const gen_prog *g, int32_t lane)
{
    return cluster_rank(((const pipe_gen *)g->ctx)->s, lane);
}

static int pipe_next(const gen_prog *g, int32_t r, void *state, prog_op *ops)
{
    const pipe_gen *pg = g->ctx;
    const sched_spec *s = pg->s;
    pstate *p = state;
    int32_t n = pg->n;
    if (!p->init) {
        p->init = 1;
        p->warm = warm_of(s, r);
    }
    for (;;) {
        if (p->phase == OPS) {
            if (p->j < p->end) {
                const act *a = &p->cur[p->j++ - p->i];
                ops[0] = pg->tab[a->st].comp[a->kind == PROG_B];
                ops[0].mb = a->mb;
                return 1;
            }
            if (p->i == n) {
                /* par/dp_lane.c's par_dp_rewrite_lane with one replica: the
                 * step's OPT op after the lane's last op */
                if (!(pg->opt > 0) || p->opt_done)
                    return 0;
                p->opt_done = 1;
                ops[0] = prog_compute(PROG_OPT, r, 0, -1, pg->opt, 0);
                return 1;
            }
            p->prev = p->i;
            p->i = p->end;
            p->old[0] = p->cur[0];
            p->old[1] = p->cur[1];
            p->phase = BATCH;
        } else if (p->phase == BATCH) {
            int join = 0;
            p->end = p->i;
            if (p->i < n) {
                p->cur[0] = p->have_next && p->next_idx == p->i
                                ? p->next
                                : action(s, r, p->warm, p->i, &join);
                p->end++;
            }
            /* only a B after an F joins, so a step has at most two */
            p->have_next = 0;
            if (s->kind == SCHED_INTERLEAVED && p->end < n) {
                act a = action(s, r, p->warm, p->end, &join);
                if (join) {
                    p->cur[1] = a;
                    p->end++;
                } else { /* the next step's first */
                    p->next = a;
                    p->next_idx = p->end;
                    p->have_next = 1;
                }
            }
            int sends, k = batch(pg, p, ops, &sends);
            int separate = s->kind == SCHED_1F1B && p->i > 0 && p->i < n &&
                           p->old[p->i - p->prev - 1].kind ==
                               p->cur[p->end - p->i - 1].kind;
            p->j = p->i;
            if (separate && sends > 0 && sends < k) {
                p->phase = SECOND;
                mark_batch(ops, sends);
                return sends;
            }
            p->phase = OPS;
            if (k > 0) {
                mark_batch(ops, k);
                return k;
            }
        } else { /* SECOND */
            int sends, k = batch(pg, p, ops, &sends);
            memmove(ops, ops + sends, (size_t)(k - sends) * sizeof *ops);
            mark_batch(ops, k - sends);
            p->phase = OPS;
            return k - sends;
        }
    }
}

/* pipe_next for one chunk per rank (GPipe, 1F1B), the same ops: a step
 * is one action, so the lane's table entry, its previous action and the
 * current one are all there is, and each call copies at most two ops.
 * It runs once per op or two, hence written out rather than through
 * pipe_next's general step. */
static inline act action_flat(enum sched_kind kind, int32_t m, int32_t warm,
                              int32_t idx)
{
    act a = {PROG_F, 0, 0};
    if (kind == SCHED_GPIPE) {
        a.kind = idx < m ? PROG_F : PROG_B;
        a.mb = idx < m ? idx : idx - m;
    } else if (idx < warm) {
        a.mb = idx;
    } else if (idx < 2 * m - warm) {
        int32_t t = idx - warm;
        a.kind = t & 1 ? PROG_B : PROG_F;
        a.mb = t & 1 ? t / 2 : warm + t / 2;
    } else {
        a.kind = PROG_B;
        a.mb = idx - m;
    }
    return a;
}

/* The transfer x (stage_ops.xfer) of a into *op; 0 when there is none. */
static inline int put(const stage_ops *t, const act *a, int send, prog_op *op)
{
    int x = (a->kind == PROG_B) * 2 + send;
    if (!t->has[x])
        return 0;
    *op = t->xfer[x];
    op->mb = a->mb;
    return 1;
}

static int flat_next(const gen_prog *g, int32_t r, void *state, prog_op *ops)
{
    const pipe_gen *pg = g->ctx;
    const sched_spec *s = pg->s;
    const stage_ops *t = &pg->tab[r];
    pstate *p = state;
    int32_t n = pg->n, i = p->i;
    if (!p->init) {
        p->init = 1;
        p->warm = warm_of(s, r);
    }
    if (p->phase == SECOND) { /* the receive of a split batch */
        put(t, &p->cur[0], 0, ops);
        p->phase = OPS;
        return 1;
    }
    if (p->phase == BATCH) {
        /* the previous action's send, this one's receive; 1F1B's
         * warm-up and cool-down send and receive apart (Megatron's
         * send_forward / recv_forward) */
        int k = i > 0 ? put(t, &p->old[0], 1, ops) : 0, sends = k;
        if (i < n) {
            p->cur[0] = action_flat(s->kind, s->m, p->warm, i);
            k += put(t, &p->cur[0], 0, &ops[k]);
        }
        p->phase = OPS;
        if (k == 2) {
            if (s->kind == SCHED_1F1B && p->old[0].kind == p->cur[0].kind) {
                p->phase = SECOND;
                return sends;
            }
            ops[0].flags |= PROG_BATCH;
        }
        if (k > 0)
            return k;
    }
    if (i < n) {
        const act *a = &p->cur[0];
        ops[0] = t->comp[a->kind == PROG_B];
        ops[0].mb = a->mb;
        p->old[0] = *a;
        p->i = i + 1;
        p->phase = BATCH;
        return 1;
    }
    /* par/dp_lane.c's par_dp_rewrite_lane with one replica: the step's OPT op
     * after the lane's last op */
    if (!(pg->opt > 0) || p->opt_done)
        return 0;
    p->opt_done = 1;
    ops[0] = prog_compute(PROG_OPT, r, 0, -1, pg->opt, 0);
    return 1;
}

int gen_pipe_applies(const sched_spec *s)
{
    if (gen_force_array())
        return 0;
    return (s->kind == SCHED_GPIPE || s->kind == SCHED_1F1B ||
            s->kind == SCHED_INTERLEAVED) &&
           s->placement == SCHED_LOOP && !s->split && !s->checkpoint &&
           !sched_async(s) && (int64_t)2 * s->m * s->v < INT32_MAX;
}

int gen_pipe_run(const sched_spec *s, net *nw, enum eng_p2p p2p, eng_sim *eng,
                 eng_result *res, ps_err *err)
{
    return gen_pipe_run_step(s, 0, nw, p2p, eng, res, err);
}

int gen_pipe_run_step(const sched_spec *s, double optimizer_seconds, net *nw,
                      enum eng_p2p p2p, eng_sim *eng, eng_result *res,
                      ps_err *err)
{
    int32_t nranks = net_ranks(nw);
    /* sched_lower's checks of the mapping, with its messages */
    for (int32_t r = 0; r < s->p; r++) {
        int32_t c = cluster_rank(s, r);
        if (c < 0 || c >= nranks)
            return ps_errf(err,
                           "pipeline rank %d maps to rank %d outside 0..%d",
                           (int)r, (int)c, (int)nranks - 1);
        for (int32_t q = 0; q < r; q++)
            if (cluster_rank(s, q) == c)
                return ps_errf(err,
                               "pipeline ranks %d and %d both map to rank %d",
                               (int)q, (int)r, (int)c);
    }
    int32_t S = s->p * s->v;
    uint8_t send_flags = (uint8_t)(s->kind == SCHED_GPIPE ? PROG_NOWAIT : 0);
    stage_ops *tab = limit_malloc((size_t)S * sizeof *tab);
    if (!tab)
        return ps_errf(err, "out of memory sizing the engine");
    for (int32_t st = 0; st < S; st++)
        stage_ops_of(s, st, send_flags, &tab[st]);
    pipe_gen pg = {s, 2 * s->m * s->v, S, optimizer_seconds, tab};
    gen_prog g = {nranks,    s->p,      2 * (S - 1), 4, sizeof(pstate),
                  pipe_rank, pipe_next, &pg,         1, GEN_ANY};
    if (s->v == 1 && s->kind != SCHED_INTERLEAVED)
        g.next = flat_next;
    int rc = eng_run_gen(eng, &g, nw, p2p, res, err);
    limit_free(tab);
    return rc;
}
