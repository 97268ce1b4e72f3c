/* Lowering of schedule orders to programs: per pipeline rank one lane of
 * compute ops (durations and memory deltas from the stage costs) with the
 * point-to-point transfers between stages inserted as Megatron-LM's
 * p2p_communication or PyTorch's _PipelineScheduleRuntime posts them. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/impl.h"
#include "sched/sched.h"
#include "sched/zb.h"

typedef struct lower {
    const sched_spec *s;
    prog_set *ps;
    int32_t base;      /* first message id of this schedule */
    int32_t r;         /* pipeline rank being lowered */
    int async;         /* sends are isends (PROG_NOWAIT) */
    int fwd_only;      /* no backward at all: F keeps nothing */
    uint8_t *has_w;    /* chunk * m + mb: this rank's order has its W */
    int32_t *stage_at; /* v entries: the model stage of each chunk of r */
} lower;

static int32_t cluster_rank(const sched_spec *s, int32_t r)
{
    return s->rank_of ? s->rank_of[r] : r;
}

/* Message of microbatch mb across the boundary between stages b and b + 1,
 * forward (activation) or backward (its gradient). Arithmetic ids keep the
 * lowering free of lookups: base + (dir * (S - 1) + b) * m + mb. */
static int32_t msg_id(const lower *L, int backward, int32_t b, int32_t mb)
{
    int32_t S = sched_nstages(L->s->placement, L->s->p, L->s->v);
    return L->base + ((backward ? S - 1 : 0) + b) * L->s->m + mb;
}

int64_t sched_msg_count(const sched_spec *s)
{
    int32_t S = sched_nstages(s->placement, s->p, s->v);
    return s->p > 1 ? 2 * (int64_t)(S - 1) * s->m : 0;
}

void sched_msg_decode(const sched_spec *s, int32_t rel, int *backward,
                      int32_t *boundary, int32_t *mb)
{
    /* msg_id's inverse */
    int32_t S = sched_nstages(s->placement, s->p, s->v);
    int32_t per = (S - 1) * s->m;
    *backward = rel >= per;
    rel %= per;
    *boundary = rel / s->m;
    *mb = rel % s->m;
}

/* The transfer the output (send) or the input (!send) of the forward
 * (fwd) or backward of unit (chunk, mb) needs; returns 0 when there is
 * none: first/last stage, or the neighbour stage on the same rank (p ==
 * 1, or the tip of a V: PyTorch's "V-schedule special case" hands the
 * tensor over locally). */
static int unit_transfer(const lower *L, int fwd, int32_t chunk, int32_t mb,
                         int send, prog_op *op)
{
    const sched_spec *s = L->s;
    int32_t S = sched_nstages(s->placement, s->p, s->v);
    int32_t st = L->stage_at[chunk];
    if (s->p == 1)
        return 0;
    /* F receives from st - 1 and sends to st + 1; B the other way */
    int32_t peer_st = (fwd != send) ? st - 1 : st + 1;
    if (peer_st < 0 || peer_st >= S)
        return 0;
    int32_t b = peer_st < st ? peer_st : st; /* boundary b | b + 1 */
    /* DualPipe: each chunk is a pipeline of its own (its microbatches
     * keep the message ids of the two apart) */
    int32_t peer_r =
        s->placement != SCHED_DUAL
            ? sched_place_rank(s->placement, s->place, s->p, peer_st)
        : chunk == 0 ? peer_st
                     : s->p - 1 - peer_st;
    if (peer_r == L->r)
        return 0;
    int32_t peer = cluster_rank(s, peer_r);
    int32_t id = msg_id(L, !fwd, b, mb);
    double bytes = s->stages[b].out_bytes;
    enum prog_kind kind = fwd ? PROG_F : PROG_B;
    /* PyTorch's ScheduleGPipe posts its sends with isend and waits on them
     * only after the last forward (and the last backward): its ranks never
     * block on a send. Megatron's 1F1B and interleaved schedules wait on
     * every batch. (torch/distributed/pipelining/schedules.py,
     * ScheduleGPipe._step_microbatches: fwd_sends_to_wait) Schedules with
     * W do the same: the zero-bubble runtimes (sail-sg's zerobubble
     * runtime, PyTorch's _PipelineScheduleRuntime) isend and wait on sends
     * lazily, and a B's gradient must leave before its W runs. */
    unsigned flags = send && s->kind == SCHED_GPIPE ? PROG_NOWAIT : 0;
    if (send && L->async) /* the receive was posted ahead */
        flags = PROG_NOWAIT | PROG_EARLY;
    *op = send ? prog_send(peer, id, bytes, kind, mb, flags)
               : prog_recv(peer, id, bytes, kind, mb, flags);
    return 1;
}

/* The transfers of action a into op (at most 2), their count. An FB
 * receives the forward's input and the backward's gradient together and
 * sends both results after it, as DualPipe's _forward_backward_chunk
 * (recv_forward, recv_backward, commit; compute; send_forward,
 * send_backward). */
static int transfer(const lower *L, const sched_action *a, int send,
                    prog_op *op)
{
    if (a->kind == PROG_R || a->kind == PROG_W)
        return 0;
    if (a->kind != SCHED_FB)
        return unit_transfer(L, a->kind == PROG_F, a->chunk, a->mb, send, op);
    int k = unit_transfer(L, 1, a->chunk, a->mb, send, op);
    return k + unit_transfer(L, 0, a->bchunk, a->bmb, send, op + k);
}

/* Pushes ops[0..n) as one batch: PROG_BATCH on all but the last. */
static int push_batch(lower *L, int32_t lane, prog_op *ops, int n)
{
    for (int i = 0; i < n; i++) {
        ops[i].flags |= i + 1 < n ? PROG_BATCH : 0;
        if (prog_push(L->ps, lane, &ops[i]))
            return -1;
    }
    return 0;
}

/* Seconds and memory change of one F, R, B or W of (chunk, mb).
 * Memory: F allocates the activations (only the input when
 * checkpointed), R the rest. A full B frees all of it. With a W, B frees
 * all but w_bytes and W frees w_bytes: the ZB paper's accounting, where F
 * costs M_B, B releases M_B - M_W and W releases M_W. */
static void unit_cost(const lower *L, uint8_t kind, int32_t chunk, int32_t mb,
                      double *secs, double *mem)
{
    const sched_spec *s = L->s;
    const sched_stage *g = &s->stages[L->stage_at[chunk]];
    double extra = g->act_bytes > g->in_bytes ? g->act_bytes - g->in_bytes : 0;
    double held = s->checkpoint ? g->in_bytes + extra : g->act_bytes;
    double keep = g->w_bytes < held ? g->w_bytes : held;
    int split = L->has_w[chunk * s->m + mb];
    switch (kind) {
    case PROG_F:
        *secs = g->fwd;
        /* inference keeps nothing for a backward */
        *mem = L->fwd_only ? 0 : s->checkpoint ? g->in_bytes : g->act_bytes;
        break;
    case PROG_R:
        *secs = g->recompute;
        *mem = extra;
        break;
    case PROG_W:
        *secs = g->wgt;
        *mem = -keep;
        break;
    default:
        *secs = split ? g->bwd : g->bwd + g->wgt;
        *mem = split ? -(held - keep) : -held;
    }
}

/* The compute ops of a into op (an FB has two), their count. An FB of
 * duration T (sched_fb_time) is its forward's share FB_F, T f / (f + b),
 * allocating the forward's activations when it starts, then the
 * backward's share FB_B freeing what the backward frees when it ends:
 * the memory of both actions over the span of one. */
static int compute(const lower *L, const sched_action *a, prog_op *op)
{
    const int32_t *st = L->stage_at;
    double secs, mem;
    if (a->kind != SCHED_FB) {
        unit_cost(L, a->kind, a->chunk, a->mb, &secs, &mem);
        op[0] = prog_compute((enum prog_kind)a->kind, st[a->chunk], a->chunk,
                             a->mb, secs, mem);
        return 1;
    }
    double f, fmem, b, bmem;
    unit_cost(L, PROG_F, a->chunk, a->mb, &f, &fmem);
    unit_cost(L, PROG_B, a->bchunk, a->bmb, &b, &bmem);
    double t = sched_fb_time(L->s, f, b);
    double tf = f + b > 0 ? t * f / (f + b) : t / 2;
    op[0] = prog_compute(PROG_FB_F, st[a->chunk], a->chunk, a->mb, tf, fmem);
    op[1] =
        prog_compute(PROG_FB_B, st[a->bchunk], a->bchunk, a->bmb, t - tf, bmem);
    return 2;
}

/* Is r the recompute of b's backward (B, or an FB's backward half)? */
static int recomputes(const sched_action *r, const sched_action *b)
{
    if (r->kind != PROG_R)
        return 0;
    if (b->kind == SCHED_FB)
        return r->chunk == b->bchunk && r->mb == b->bmb;
    return b->kind == PROG_B && r->chunk == b->chunk && r->mb == b->mb;
}

/* One lane. The order is cut into steps (one action, or a few joined ones);
 * before each step one batch holds the sends of the previous step's actions
 * and the receives of this step's, after the last step its sends: Megatron's
 * send_forward_recv_backward and friends. A B joins the R right before it:
 * Megatron receives the gradient before backward_step, which is where the
 * recompute runs. A step has at most F, R, B or R, FB: two sends, two
 * receives. */
static int lower_rank(lower *L, const sched_action *acts, uint8_t *join,
                      int32_t n)
{
    int32_t lane = prog_add_lane(L->ps, cluster_rank(L->s, L->r));
    if (lane < 0)
        return -1;
    memset(L->has_w, 0, (size_t)L->s->m * (size_t)L->s->v);
    for (int32_t i = 0; i < n; i++)
        if (acts[i].kind == PROG_W)
            L->has_w[acts[i].chunk * L->s->m + acts[i].mb] = 1;
    for (int32_t i = 1; i < n; i++)
        if (recomputes(&acts[i - 1], &acts[i]))
            join[i] = 1;
    int32_t prev = 0, i = 0; /* previous step: acts[prev .. i) */
    for (;;) {
        int32_t end = i + (i < n);
        while (end < n && join[end])
            end++;
        prog_op batch[8];
        int k = 0;
        for (int32_t j = prev; j < i; j++)
            k += transfer(L, &acts[j], 1, &batch[k]);
        int sends = k;
        for (int32_t j = i; j < end; j++)
            k += transfer(L, &acts[j], 0, &batch[k]);
        assert(k <= 4);
        /* Megatron's 1F1B pairs a send with a receive only when the kind
         * changes (send_forward_recv_backward, send_backward_recv_forward);
         * between two forwards (warm-up) or two backwards (cool-down) it
         * calls send_forward / recv_forward (send_backward / recv_backward)
         * one after the other, each waited on alone. */
        int separate = L->s->kind == SCHED_1F1B && i > 0 && i < n &&
                       acts[i - 1].kind == acts[end - 1].kind;
        if (separate && sends > 0 && sends < k) {
            if (push_batch(L, lane, batch, sends) ||
                push_batch(L, lane, batch + sends, k - sends))
                return -1;
        } else if (push_batch(L, lane, batch, k)) {
            return -1;
        }
        if (i == n)
            return 0;
        for (int32_t j = i; j < end; j++) {
            prog_op op[2];
            int nc = compute(L, &acts[j], op);
            for (int c = 0; c < nc; c++)
                if (prog_push(L->ps, lane, &op[c]))
                    return -1;
        }
        prev = i;
        i = end;
    }
}

/* Validates everything before appending, so that a failure other than out
 * of memory leaves ps untouched. */
int sched_lower(const sched_spec *s, prog_set *ps, ps_err *err)
{
    if (sched_check(s, err))
        return PS_ERR;
    for (int32_t r = 0; r < s->p; r++) {
        int32_t c = cluster_rank(s, r);
        if (c < 0 || c >= ps->nranks)
            return ps_errf(err,
                           "pipeline rank %d maps to rank %d outside 0..%d",
                           (int)r, (int)c, (int)ps->nranks - 1);
        for (int32_t q = 0; q < r; q++)
            if (cluster_rank(s, q) == c)
                return ps_errf(err,
                               "pipeline ranks %d and %d both map to rank %d",
                               (int)q, (int)r, (int)c);
    }
    int64_t nmsg = sched_msg_count(s);
    if ((int64_t)ps->nmsgs + nmsg > INT32_MAX)
        return ps_errf(err, "too many messages (%lld)",
                       (long long)(ps->nmsgs + nmsg));
    int32_t max = 4 * s->m * s->v;
    sched_action *acts = malloc((size_t)max * sizeof *acts);
    uint8_t *join = malloc((size_t)max);
    uint8_t *has_w = malloc((size_t)s->m * (size_t)s->v);
    int32_t *stage_at = malloc((size_t)s->v * sizeof *stage_at);
    if (!acts || !join || !has_w || !stage_at) {
        free(acts);
        free(join);
        free(has_w);
        free(stage_at);
        return ps_errf(err, "out of memory lowering the schedule");
    }
    sched_action *zb = NULL;
    if (s->kind == SCHED_ZB_H1 || s->kind == SCHED_ZB_H2) {
        zb = malloc((size_t)3 * s->m * (size_t)s->p * sizeof *zb);
        int zrc = zb ? sched_zb_orders(s, zb, err)
                     : ps_errf(err, "out of memory lowering the schedule");
        if (zrc) {
            free(acts);
            free(join);
            free(has_w);
            free(stage_at);
            free(zb);
            return PS_ERR;
        }
    }
    lower L = {s,     ps,      ps->nmsgs, 0, sched_async(s), sched_fwd_only(s),
               has_w, stage_at};
    ps->nmsgs += (int32_t)nmsg;
    int rc = PS_OK;
    for (int32_t r = 0; r < s->p && rc == PS_OK; r++) {
        sched_buf o = {acts,
                       join,
                       0,
                       max,
                       s->checkpoint,
                       NULL,
                       s->m,
                       sched_builtin_split(s),
                       zb};
        L.r = r;
        for (int32_t c = 0; c < s->v; c++)
            stage_at[c] =
                sched_place_stage(s->placement, s->place, s->p, s->v, c, r);
        if (sched_order_rank(s, r, &o, err))
            rc = PS_ERR;
        else if (lower_rank(&L, acts, join, o.n))
            rc = ps_errf(err, "out of memory lowering rank %d", (int)r);
    }
    free(acts);
    free(join);
    free(has_w);
    free(stage_at);
    free(zb);
    return rc;
}

/* The checked entry for one rank's order (sched.h): the spec checked here,
 * so that the orders of sched/sched.c never call up into sched/check.c. */
int sched_order(const sched_spec *s, int32_t rank, sched_action *out,
                int32_t max, int32_t *n, ps_err *err)
{
    if (sched_check(s, err))
        return PS_ERR;
    if (rank < 0 || rank >= s->p)
        return ps_errf(err, "rank %d outside the pipeline 0..%d", (int)rank,
                       (int)s->p - 1);
    sched_buf o = {out,           NULL, 0,    max,
                   s->checkpoint, NULL, s->m, sched_builtin_split(s),
                   NULL};
    if (sched_order_rank(s, rank, &o, err))
        return PS_ERR;
    *n = o.n;
    if (o.n > max)
        return ps_errf(err, "rank %d: order has %d actions but room for %d",
                       (int)rank, (int)o.n, (int)max);
    return PS_OK;
}
