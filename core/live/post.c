/* Counting, posting and completing a worker's messages (live/worker.h):
 * a batch's sends queued on their connections, its receives posted,
 * streamed into the front end's arrays as they arrive where that is
 * recv_done's outcome (live_ops.recv_stream), and handed over in op order
 * when the batch completes; the byte counts of the log. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "live/worker.h"

/* ------------------------------------------------------------------ */
/* Counting and completion                                             */

static void count(worker *w, const prog_op *op, int send, double bytes,
                  double now)
{
    if (w->iteration < w->cfg->warmup)
        return;
    if (w->ncounts == w->counts_cap) {
        int32_t cap = w->counts_cap ? 2 * w->counts_cap : 256;
        live_count *c = realloc(w->counts, (size_t)cap * sizeof *c);
        if (!c)
            return; /* the log loses rows; the run does not fail */
        w->counts = c;
        w->counts_cap = cap;
    }
    /* whole, padding included: the bytes go to the coordinator */
    memset(&w->counts[w->ncounts], 0, sizeof w->counts[0]);
    w->counts[w->ncounts++] = (live_count){
        .iteration = w->iteration - w->cfg->warmup,
        .rank = w->rank,
        .peer = op->peer,
        .msg = op->msg,
        .tag = op->tag,
        .mb = op->mb,
        .send = send,
        .kind = op->kind,
        .bytes = bytes,
        .sent = w->bytes.sent,
        .recvd = w->bytes.recvd,
        .t = now - w->t0,
    };
}

static prog_op *msg_op(worker *w, int32_t msg, int send)
{
    const prog_msg *m = &w->ps->msgs[msg];
    int32_t l = send ? m->send_lane : m->recv_lane;
    return &w->ps->lanes[l].ops[send ? m->send_op : m->recv_op];
}

void worker_out_done(void *ctx, wire_out *o)
{
    worker *w = ctx;
    if (o->lane < 0) { /* a signal (worker_post_signal) */
        w->open_sends--;
        return;
    }
    prog_op *op = &w->ps->lanes[o->lane].ops[o->index];
    op->t_start = o->t_first - w->t0;
    op->t_end = o->t_last - w->t0;
    free(o->owned);
    o->owned = NULL;
    w->open_sends--;
    count(w, op, 1, (double)o->len, o->t_last);
}

void worker_in_done(void *ctx, wire_in *in)
{
    worker *w = ctx;
    int32_t msg = (int32_t)(in - w->ins);
    count(w, msg_op(w, msg, 0), 0, (double)in->len, in->t_end);
}

/* ------------------------------------------------------------------ */
/* Posting                                                             */

/* The connection of op's message (its lanes' pair), or -1 with err set. */
static int32_t conn_for(const worker *w, const prog_op *op, ps_err *err)
{
    int32_t c =
        op->msg >= 0 && op->msg < w->ps->nmsgs ? w->conn_of[op->msg] : -1;
    if (c < 0)
        ps_errf(err, "rank %d: no connection to rank %d", (int)w->rank,
                (int)op->peer);
    return c;
}

/* o leaves after the messages queued on cn before it. */
static void enqueue(wire_conn *cn, wire_out *o)
{
    if (cn->tail)
        cn->tail->next = o;
    else
        cn->head = o;
    cn->tail = o;
}

int worker_post_send(worker *w, lane_rt *lr, int32_t i, double now, ps_err *err)
{
    prog_op *op = &w->ps->lanes[lr->lane].ops[i];
    int32_t c = conn_for(w, op, err);
    if (c < 0)
        return PS_ERR;
    const void *data = NULL;
    size_t len = 0;
    if (w->cfg->ops->send_data(w->cfg->ctx, w->rank, lr->lane, i, op, &data,
                               &len, err))
        return PS_ERR;
    wire_out *o = &w->outs[op->msg];
    memset(o, 0, sizeof *o);
    o->hdr[0] = WIRE_MAGIC;
    o->hdr[1] = (uint32_t)op->msg;
    o->hdr[2] = (uint32_t)((uint64_t)len & 0xffffffffu);
    o->hdr[3] = (uint32_t)((uint64_t)len >> 32);
    o->data = data;
    o->len = len;
    o->ready = len;
    o->posted = 1;
    if ((op->flags & PROG_NOWAIT) && !w->cfg->ops->recv_target) {
        /* the lane goes on: keep a copy (with recv_target, only when a
         * receive would overwrite it, protect_sends) */
        o->owned = malloc(len + 1);
        if (!o->owned)
            return ps_errf(err, "rank %d: out of memory", (int)w->rank);
        if (len)
            memcpy(o->owned, data, len);
        o->data = o->owned;
    }
    o->not_before = now + w->cfg->inject.latency;
    o->lane = lr->lane;
    o->index = i;
    op->t_start = now - w->t0;
    op->t_end = NAN;
    wire_conn *cn = &w->conns[c];
    enqueue(cn, o);
    w->open_sends++;
    return PS_OK;
}

void worker_post_signal(worker *w, int32_t sg, double now)
{
    wire_out *o = &w->sig_outs[sg];
    memset(o, 0, sizeof *o);
    o->hdr[0] = WIRE_SIGNAL;
    o->hdr[1] = (uint32_t)sg;
    o->not_before = now + w->cfg->inject.latency;
    o->lane = o->index = -1;
    wire_conn *cn = &w->conns[w->sig_conn[sg]];
    enqueue(cn, o);
    w->open_sends++;
}

int worker_post_recv(worker *w, lane_rt *lr, int32_t i, double now, ps_err *err)
{
    prog_op *op = &w->ps->lanes[lr->lane].ops[i];
    int32_t c = conn_for(w, op, err);
    if (c < 0)
        return PS_ERR;
    size_t len = 0;
    if (w->cfg->ops->recv_len(w->cfg->ctx, w->rank, lr->lane, i, op, &len, err))
        return PS_ERR;
    wire_in *in = &w->ins[op->msg];
    if (in->started && in->len != len)
        return ps_errf(err,
                       "rank %d: message %d from rank %d has %llu bytes, "
                       "the receive expects %llu",
                       (int)w->rank, (int)op->msg, (int)op->peer,
                       (unsigned long long)in->len, (unsigned long long)len);
    in->len = len;
    in->lane = lr->lane;
    in->index = i;
    op->t_start = now - w->t0;
    op->t_end = NAN;
    return PS_OK; /* wire_post once the batch is posted (post_batch) */
}

/* Is op i of lr's batch complete? */
int worker_op_complete(const worker *w, const prog_op *op)
{
    if (op->type == PROG_SEND)
        return (op->flags & PROG_NOWAIT) || w->outs[op->msg].done;
    return w->ins[op->msg].done;
}

/* A receive is about to write [dst, dst + len): every send still under
 * way whose bytes lie there gets a copy of them first. */
static int protect_sends(worker *w, const void *dst, size_t len, ps_err *err)
{
    const char *lo = dst, *hi = lo + len;
    for (int32_t c = 0; c < w->nconn; c++)
        for (wire_out *o = w->conns[c].head; o; o = o->next) {
            if (o->owned || o->done || o->len == 0 || o->data >= hi ||
                o->data + o->len <= lo)
                continue;
            if (o->ready < o->len) /* live/early.c rules this out */
                return ps_errf(err,
                               "rank %d: a receive overwrites the source of "
                               "an early send",
                               (int)w->rank);
            o->owned = malloc(o->len);
            if (!o->owned)
                return ps_errf(err, "rank %d: out of memory", (int)w->rank);
            memcpy(o->owned, o->data, o->len);
            o->data = o->owned;
        }
    return PS_OK;
}

/* Does the target of receive i of lr's batch overlap another receive's
 * of the batch? Then the receives must apply in op order, at the end. */
static int overlaps_other(worker *w, lane_rt *lr, int32_t i, const char *lo,
                          const char *hi, ps_err *err)
{
    prog_lane *lane = &w->ps->lanes[lr->lane];
    for (int32_t j = lr->pc; j < lr->batch_end; j++) {
        const void *dst;
        size_t dlen;
        if (j == i || lane->ops[j].type != PROG_RECV)
            continue;
        if (w->cfg->ops->recv_target(w->cfg->ctx, w->rank, lr->lane, j,
                                     &lane->ops[j], &dst, &dlen, err))
            return -1;
        if ((const char *)dst < hi && lo < (const char *)dst + dlen)
            return 1;
    }
    return 0;
}

/* Receive i of lr's just-posted batch: streamed when the front end can
 * apply it as it arrives (live_ops.recv_stream) and nothing tells it
 * apart from recv_done at the batch's end. */
static int choose_stream(worker *w, lane_rt *lr, int32_t i, ps_err *err)
{
    const live_ops *ops = w->cfg->ops;
    prog_op *op = &w->ps->lanes[lr->lane].ops[i];
    wire_in *in = &w->ins[op->msg];
    if (!ops->recv_stream || !ops->recv_target || in->started || !in->len ||
        lr->batch_end - lr->pc > 64)
        return PS_OK;
    const void *dst;
    size_t dlen;
    if (ops->recv_target(w->cfg->ctx, w->rank, lr->lane, i, op, &dst, &dlen,
                         err))
        return PS_ERR;
    int o = overlaps_other(w, lr, i, dst, (const char *)dst + dlen, err);
    if (o)
        return o < 0 ? PS_ERR : PS_OK;
    void *direct = NULL;
    size_t unit = 0;
    if (ops->recv_stream(w->cfg->ctx, w->rank, lr->lane, i, op, &direct, &unit,
                         err))
        return PS_ERR;
    if (unit > 64 || (!direct && !unit))
        return unit > 64 ? ps_errf(err, "rank %d: a stream unit of %zu bytes",
                                   (int)w->rank, unit)
                         : PS_OK;
    if (protect_sends(w, dst, dlen, err))
        return PS_ERR;
    in->direct = direct != NULL;
    in->buf = direct;
    in->unit = direct ? 0 : unit;
    return PS_OK;
}

/* The sends and receives of lr's batch are posted: each receive is
 * streamed or not, and handed to its connection. */
int worker_post_batch(worker *w, lane_rt *lr, ps_err *err)
{
    prog_lane *lane = &w->ps->lanes[lr->lane];
    for (int32_t i = lr->pc; i < lr->batch_end; i++) {
        prog_op *op = &lane->ops[i];
        if (op->type != PROG_RECV)
            continue;
        if (choose_stream(w, lr, i, err))
            return PS_ERR;
        if (wire_post(&w->conns[w->conn_of[op->msg]], &w->ins[op->msg],
                      op->msg))
            return ps_errf(err, "rank %d: out of memory", (int)w->rank);
    }
    return PS_OK;
}

/* A streamed receive's bytes, handed to the front end (wire_conn's
 * chunk_cb). */
int worker_in_chunk(void *ctx, wire_in *in, size_t off, const char *data,
                    size_t len, ps_err *err)
{
    worker *w = ctx;
    const prog_op *op = &w->ps->lanes[in->lane].ops[in->index];
    return w->cfg->ops->recv_chunk(w->cfg->ctx, w->rank, in->lane, in->index,
                                   op, off, data, len, err);
}

/* The batch of lr is complete: receives handed over in op order. */
int worker_finish_batch(worker *w, lane_rt *lr, ps_err *err)
{
    prog_lane *lane = &w->ps->lanes[lr->lane];
    for (int32_t i = lr->pc; i < lr->batch_end; i++) {
        prog_op *op = &lane->ops[i];
        if (op->type != PROG_RECV)
            continue;
        wire_in *in = &w->ins[op->msg];
        op->t_end = in->t_end - w->t0;
        if (in->direct || in->unit) { /* applied as it came */
            in->buf = NULL;
            continue;
        }
        const void *dst;
        size_t dlen;
        if (w->cfg->ops->recv_target &&
            (w->cfg->ops->recv_target(w->cfg->ctx, w->rank, lr->lane, i, op,
                                      &dst, &dlen, err) ||
             protect_sends(w, dst, dlen, err)))
            return PS_ERR;
        int rc = w->cfg->ops->recv_done(w->cfg->ctx, w->rank, lr->lane, i, op,
                                        in->buf, in->len, err);
        free(in->buf);
        in->buf = NULL;
        if (rc)
            return PS_ERR;
    }
    lr->pc = lr->batch_end;
    lr->state = L_RUN;
    return PS_OK;
}
