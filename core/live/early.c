/* Early sends: a lane's next batch's sends go out while its current
 * batch's receives still arrive, each byte once it is final.
 *
 * gloo's ring all-reduce (gloo/allreduce.cc, `ring`) cuts each rank's
 * chunk into segments of at most 1 MiB (kMaxSegmentSize, gloo/allreduce.h)
 * and keeps two in flight, so that a rank forwards what it has reduced
 * while the rest of the step still arrives; a rank that waits for a whole
 * step's message before it sends the next one leaves the ring idle for a
 * message's time at every step. pipesim's programs say the same bytes
 * move in the same order, a step's message at a time, and the front end
 * of a collective applies a receive as its bytes arrive
 * (live_ops.recv_stream): so the executor can let step s + 1's send read
 * the part of its source that step s's receive has finished, as gloo's
 * segments (and NCCL's slices) do, without changing a message, a peer or
 * an order: the next batch's sends are queued on their connections when
 * the batch before is posted, and wire_write sends no byte past
 * wire_out.ready, the prefix of the source that no pending receive of the
 * batch before still writes. Every byte leaves after its last write, so
 * outputs stay data mode's bit for bit (checked every run).
 *
 * Only where every receive of the current batch that writes the source
 * is streamed (its applied prefix is known), and on a rank with one lane;
 * a front end without recv_stream (pipelines) runs batch by batch, as
 * before. */

#include "live/worker.h"

/* The first op after lr's batch starts a batch of sends and receives:
 * its end, or -1. */
static int32_t next_batch_end(const worker *w, const lane_rt *lr)
{
    const prog_lane *lane = &w->ps->lanes[lr->lane];
    int32_t i = lr->batch_end;
    if (i >= lane->n ||
        (lane->ops[i].type != PROG_SEND && lane->ops[i].type != PROG_RECV))
        return -1;
    while (i < lane->n - 1 && (lane->ops[i].flags & PROG_BATCH))
        i++;
    return i + 1;
}

/* Bytes of [src, src + len) that no pending receive of lr's batch still
 * writes: the least, over the receives whose target overlaps it, of the
 * bytes before the end of the receive's applied prefix; -1 when a
 * receive that overlaps it is not streamed (its bytes land at the
 * batch's end). */
static int64_t ready_bytes(worker *w, const lane_rt *lr, const char *src,
                           size_t len, ps_err *err)
{
    const live_ops *ops = w->cfg->ops;
    prog_lane *lane = &w->ps->lanes[lr->lane];
    int64_t ready = (int64_t)len;
    for (int32_t i = lr->pc; i < lr->batch_end; i++) {
        prog_op *op = &lane->ops[i];
        if (op->type != PROG_RECV)
            continue;
        const wire_in *in = &w->ins[op->msg];
        const void *dst;
        size_t dlen;
        if (ops->recv_target(w->cfg->ctx, w->rank, lr->lane, i, op, &dst, &dlen,
                             err))
            return -2;
        const char *d = dst;
        if (d >= src + len || d + dlen <= src)
            continue;
        if (!in->direct && !in->unit)
            return -1; /* applied at the batch's end, done or not */
        if (in->done)
            continue;
        const wire_conn *c = &w->conns[w->conn_of[op->msg]];
        size_t applied = in->got - (c->cur == in ? c->chunk_fill : 0);
        int64_t r = (int64_t)(d + applied - src);
        if (r < ready)
            ready = r < 0 ? 0 : r;
    }
    return ready;
}

int worker_post_early(worker *w, lane_rt *lr, double now, ps_err *err)
{
    const live_ops *ops = w->cfg->ops;
    lr->early_end = 0;
    /* one lane only: another lane's receive may be posted onto an early
     * send's source before the source is final (NCCL's tree: the down
     * lane posts the receive of chunk c while the up lane still reduces
     * it), and a receive posted over a send still under way is handled
     * by copying the send's bytes, which an early send does not have yet */
    if (!ops->recv_stream || !ops->recv_target || w->nl != 1 ||
        now - w->t0 >= w->stall_at)
        return PS_OK;
    int32_t end = next_batch_end(w, lr);
    if (end < 0)
        return PS_OK;
    prog_lane *lane = &w->ps->lanes[lr->lane];
    /* every send of the next batch must be able to go: one whose source a
     * receive lands on at the batch's end waits, and the batch with it */
    for (int32_t j = lr->batch_end; j < end; j++) {
        prog_op *op = &lane->ops[j];
        if (op->type != PROG_SEND)
            continue;
        const void *data;
        size_t len;
        if (ops->send_data(w->cfg->ctx, w->rank, lr->lane, j, op, &data, &len,
                           err))
            return PS_ERR;
        int64_t r = ready_bytes(w, lr, data, len, err);
        if (r == -2)
            return PS_ERR;
        if (r < 0)
            return PS_OK;
    }
    for (int32_t j = lr->batch_end; j < end; j++) {
        if (lane->ops[j].type != PROG_SEND)
            continue;
        if (worker_post_send(w, lr, j, now, err))
            return PS_ERR;
        w->outs[lane->ops[j].msg].ready = 0; /* worker_early_update's */
    }
    lr->early_end = end;
    return worker_early_update(w, err);
}

int worker_early_update(worker *w, ps_err *err)
{
    for (int32_t l = 0; l < w->nl; l++) {
        lane_rt *lr = &w->lanes[l];
        if (lr->state != L_BATCH || lr->early_end <= lr->batch_end)
            continue;
        prog_lane *lane = &w->ps->lanes[lr->lane];
        for (int32_t j = lr->batch_end; j < lr->early_end; j++) {
            prog_op *op = &lane->ops[j];
            wire_out *o = &w->outs[op->msg];
            if (op->type != PROG_SEND || o->ready == o->len)
                continue;
            int64_t r = ready_bytes(w, lr, o->data, o->len, err);
            if (r < 0)
                return r == -2 ? PS_ERR
                               : ps_errf(err,
                                         "rank %d: an early send's source is "
                                         "not streamed",
                                         (int)w->rank);
            if ((size_t)r > o->ready)
                o->ready = (size_t)r;
        }
    }
    return PS_OK;
}

void worker_early_release(worker *w, lane_rt *lr)
{
    prog_lane *lane = &w->ps->lanes[lr->lane];
    for (int32_t j = lr->batch_end; j < lr->early_end; j++)
        if (lane->ops[j].type == PROG_SEND)
            w->outs[lane->ops[j].msg].ready = w->outs[lane->ops[j].msg].len;
}
