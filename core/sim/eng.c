/* Engine: lanes advance until they block; events unblock them.
 *
 * Per event the work is O(log n) for the heap plus O(1) array lookups: the
 * message table from prog_seal pairs sends and receives, lanes waiting for a
 * device or a signal sit in intrusive FIFO lists, and unblocked lanes go
 * through a ring of ready lanes so that nothing recurses. No allocation
 * happens after eng_run has sized its arrays. */
#include "sim/eng.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"
#include "sim/eng_impl.h"

enum msg_state_bits {
    MSG_SEND_POSTED = 1,
    MSG_RECV_POSTED = 2,
    MSG_STARTED = 4,
    MSG_ARRIVED = 8,
    MSG_LOST = 16 /* on a link that is down (sim/fault.h): never arrives */
};

/* Connections a lane keeps apart: a tree position's 3 children and its
 * parent (NCCL_MAX_TREE_ARITY, src/include/device.h). A lane that sends to
 * more peers hands an entry over in turn: that peer's next send starts
 * without waiting for the earlier one (fair sharing), never a deadlock. */
#define ENG_LANE_CONNS 4

struct lane_rt {
    int32_t pc;           /* next op (the running or blocked one) */
    int32_t batch_end;    /* blocked in a batch: first op after it */
    int32_t pending;      /* incomplete ops of the current batch */
    int32_t next;         /* next lane in a device or signal wait list */
    uint32_t wait_seq;    /* counts blocked batches, for EQ_TIMEOUT */
    uint32_t expired;     /* wait_seq whose timeout expired (e->expired) */
    int32_t expired_next; /* next lane in e->expired */
    /* net_start_conn's states of its slotted sends, one per peer (NCCL
     * keeps one FIFO per (channel, peer) connection: a tree's down group
     * sends each chunk to up to NCCL_MAX_TREE_ARITY = 3 children through
     * three connections, src/device/prims_simple.h, NCCL 2.30.7); peer + 1
     * in conn_peer, 0: unused */
    int32_t conn[ENG_LANE_CONNS];
    int32_t conn_peer[ENG_LANE_CONNS];
    uint8_t conn_next; /* the entry a further peer takes over */
    uint8_t state;     /* enum lane_state */
};

/* The connection state of lane lr's slotted sends to peer. */
static int32_t *lane_conn(lane_rt *lr, int32_t peer)
{
    int32_t k = peer + 1;
    for (int i = 0; i < ENG_LANE_CONNS; i++) {
        if (lr->conn_peer[i] == k)
            return &lr->conn[i];
        if (lr->conn_peer[i] == 0) {
            lr->conn_peer[i] = k;
            return &lr->conn[i];
        }
    }
    int i = lr->conn_next;
    lr->conn_next = (uint8_t)((i + 1) % ENG_LANE_CONNS);
    lr->conn_peer[i] = k;
    lr->conn[i] = 0;
    return &lr->conn[i];
}

eng_sim *eng_new(void)
{
    eng_sim *e = calloc(1, sizeof *e);
    if (e)
        eq_init(&e->q);
    return e;
}

void eng_set_faults(eng_sim *e, const fault_plan *fp)
{
    e->fp = fp;
}

void eng_set_sink(eng_sim *e, const eng_sink *sink)
{
    if (sink)
        e->sink = *sink;
    else
        memset(&e->sink, 0, sizeof e->sink);
}

void eng_set_count_base(eng_sim *e, int64_t base)
{
    e->count_base = base;
}

void eng_set_memory(eng_sim *e, const double *static_bytes)
{
    e->static_bytes = static_bytes;
}

void eng_stats_of(const eng_sim *e, eng_stats *out)
{
    out->busy = e->busy;
    out->mem = e->mem;
    out->mem_merged = e->mem_merged;
}

void eng_free(eng_sim *e)
{
    if (!e)
        return;
    if (e->cur_free)
        e->cur_free(e);
    limit_free(e->busy);
    limit_free(e->mem);
    limit_free(e->mem_lane);
    eq_free(&e->q);
    limit_free(e->lane);
    limit_free(e->msg);
    limit_free(e->device);
    limit_free(e->device_wait);
    limit_free(e->raised);
    limit_free(e->signal_wait);
    limit_free(e->ready);
    free(e);
}

/* The per-message states are visited one lane's message after another's,
 * far apart: keep them on huge pages (see prog_big_alloc). The contents
 * need not survive a grow. */
static int reserve_big(uint8_t **p, int32_t *cap, int32_t n)
{
    if (n < *cap)
        return 0;
    limit_free(*p);
    *cap = 0;
    *p = prog_big_alloc((size_t)n + 1);
    if (!*p)
        return -1;
    *cap = n + 1;
    return 0;
}

static int size_arrays(eng_sim *e, const prog_set *ps)
{
    if (eng_reserve_((void **)&e->lane, &e->lane_cap, ps->nlanes,
                     sizeof *e->lane) ||
        reserve_big(&e->msg, &e->msg_cap, ps->nmsgs) ||
        eng_reserve_((void **)&e->raised, &e->raised_cap, ps->nsignals, 1) ||
        eng_reserve_((void **)&e->signal_wait, &e->signal_wait_cap,
                     ps->nsignals, sizeof *e->signal_wait) ||
        eng_begin_stats_(e, ps->nlanes, ps->nranks))
        return -1;
    memset(e->lane, 0, ((size_t)ps->nlanes + 1) * sizeof *e->lane);
    memset(e->msg, 0, (size_t)ps->nmsgs + 1);
    memset(e->raised, 0, (size_t)ps->nsignals + 1);
    for (int32_t s = 0; s < ps->nsignals; s++)
        e->signal_wait[s] = (wait_list){-1, -1};
    return 0;
}

/* Op op of lane l has its final times: the completion hook. */
static inline void done(eng_sim *e, int32_t l, const prog_op *op)
{
    if (!e->sink.op_done)
        return;
    const prog_lane *lane = &e->ps->lanes[l];
    eng_done d = {op, op - lane->ops, l, lane->rank};
    e->sink.op_done(e->sink.ctx, &d);
}

/* Lane states (asserts, free under NDEBUG): a lane is READY only in the
 * ring, COMPUTING only while it holds its device or runs a DELAY, waiting in
 * exactly one wait (device list, signal list or batch); DONE and STALLED are
 * final. */
static void make_ready(eng_sim *e, int32_t lane)
{
    assert(e->lane[lane].state != LANE_DONE &&
           e->lane[lane].state != LANE_STALLED);
    assert(e->ready_n < e->ps->nlanes + 1); /* a lane is in the ring once */
    int32_t cap = e->ps->nlanes + 1, i = e->ready_head + e->ready_n;
    e->ready[i >= cap ? i - cap : i] = lane; /* no division per event */
    e->ready_n++;
    e->lane[lane].state = LANE_READY;
}

static void wait_on(eng_sim *e, wait_list *w, int32_t lane)
{
    e->lane[lane].next = -1;
    if (w->tail >= 0)
        e->lane[w->tail].next = lane;
    else
        w->head = lane;
    w->tail = lane;
}

static int32_t wake_one(eng_sim *e, wait_list *w)
{
    int32_t lane = w->head;
    if (lane >= 0) {
        w->head = e->lane[lane].next;
        if (w->head < 0)
            w->tail = -1;
    }
    return lane;
}

static void start_transfer(eng_sim *e, int32_t id, double now)
{
    const prog_msg *m = &e->ps->msgs[id];
    prog_op *s = &e->ps->lanes[m->send_lane].ops[m->send_op];
    assert(!(e->msg[id] & MSG_STARTED)); /* a message moves once */
    e->msg[id] |= MSG_STARTED;
    if (e->fp &&
        now >= fault_down_at(e->fp, e->ps->lanes[m->send_lane].rank, s->peer)) {
        e->msg[id] |= MSG_LOST; /* never starts */
        s->t_start = now;
        return;
    }
    e->transfers++;
    /* Generators hand out a sender's message ids in lane order, so this
     * lane's next transfer is most likely id + 1: fetch its entry while
     * the other lanes run (a hint; the table has a spare entry). */
    __builtin_prefetch(&e->ps->msgs[id + 1]);
    int32_t src = e->ps->lanes[m->send_lane].rank;
    /* a slotted send (coll/coll.h "Slots": NCCL's pipelined ring and tree) is
     * one of the lane's connection to its peer, whose chunks leave in
     * order: behind the one before it to that peer (net_start_conn) rather
     * than sharing the link with it; sends to other peers go on at once */
    if ((s->flags & PROG_EARLY)
            ? net_start_conn(e->nw, lane_conn(&e->lane[m->send_lane], s->peer),
                             m->send_lane, id, src, s->peer, s->bytes, now,
                             &s->t_start)
            : net_start(e->nw, id, src, s->peer, s->bytes, now, &s->t_start))
        e->oom = 1;
}

/* Posts one SEND or RECV of lane l; returns 1 when it is complete
 * already. */
static int post(eng_sim *e, int32_t l, prog_op *op, double now)
{
    int32_t id = op->msg;
    uint8_t *st = &e->msg[id];
    assert(id >= 0 && id < e->ps->nmsgs); /* prog_seal checked it */
    if (op->type == PROG_SEND) {
        assert(!(*st & MSG_SEND_POSTED));
        *st |= MSG_SEND_POSTED;
        if (e->p2p == ENG_EAGER || (op->flags & PROG_EARLY)) {
            start_transfer(e, id, now);
            return 1;
        }
        if (*st & MSG_RECV_POSTED)
            start_transfer(e, id, now);
        return (op->flags & PROG_NOWAIT) != 0;
    }
    op->t_start = now;
    assert(!(*st & MSG_RECV_POSTED));
    *st |= MSG_RECV_POSTED;
    if (*st & MSG_ARRIVED) {
        op->t_end = now;
        done(e, l, op);
        return 1;
    }
    if (e->p2p == ENG_RENDEZVOUS && (*st & MSG_SEND_POSTED) &&
        !(*st & MSG_STARTED))
        start_transfer(e, id, now);
    return 0;
}

static void complete_one(eng_sim *e, int32_t lane)
{
    lane_rt *lr = &e->lane[lane];
    assert(lr->state == LANE_WAIT_BATCH && lr->pending > 0);
    if (--lr->pending == 0) {
        lr->pc = lr->batch_end;
        make_ready(e, lane);
    }
}

static void arrived(eng_sim *e, int32_t id, double now)
{
    const prog_msg *m = &e->ps->msgs[id];
    prog_op *send = &e->ps->lanes[m->send_lane].ops[m->send_op];
    assert((e->msg[id] & MSG_STARTED) && !(e->msg[id] & MSG_ARRIVED));
    if (e->fp && now >= fault_down_at(e->fp, e->ps->lanes[m->send_lane].rank,
                                      send->peer)) {
        e->msg[id] |= MSG_LOST; /* in flight when the link went down */
        return;
    }
    e->msg[id] |= MSG_ARRIVED;
    send->t_end = now;
    net_event_queued(e->nw, &send->t_start); /* it waited on its channel */
    done(e, m->send_lane, send);
    if (e->p2p == ENG_RENDEZVOUS && !(send->flags & PROG_NOWAIT))
        complete_one(e, m->send_lane);
    if (e->msg[id] & MSG_RECV_POSTED) {
        prog_op *recv = &e->ps->lanes[m->recv_lane].ops[m->recv_op];
        recv->t_end = now;
        done(e, m->recv_lane, recv);
        complete_one(e, m->recv_lane);
    }
}

static void advance(eng_sim *e, int32_t l, double now)
{
    lane_rt *lr = &e->lane[l];
    prog_lane *lane = &e->ps->lanes[l];
    assert(lr->state == LANE_READY); /* advanced only from the ring */
    while (lr->pc < lane->n) {
        prog_op *op = &lane->ops[lr->pc];
        if (e->fp && now >= e->fp->rank[lane->rank].stall_at) {
            lr->state = LANE_STALLED;
            return;
        }
        switch (op->type) {
        case PROG_COMPUTE:
            if (e->device[lane->rank] >= 0) {
                wait_on(e, &e->device_wait[lane->rank], l);
                lr->state = LANE_WAIT_DEVICE;
                return;
            }
            e->device[lane->rank] = l;
            op->t_start = now;
            op->t_end = now + (e->fp ? fault_compute_seconds(e->fp, lane->rank,
                                                             now, op->seconds)
                                     : op->seconds);
            lr->state = LANE_COMPUTING;
            if (op->mem > 0)
                eng_mem_apply_(e, l, lane->rank, now, op->mem);
            if (eq_push(&e->q, op->t_end, EQ_COMPUTE, l, 0))
                e->oom = 1;
            e->ops++;
            return;
        case PROG_DELAY: /* the lane waits; the device stays free */
            op->t_start = now;
            op->t_end = now + op->seconds;
            lr->state = LANE_COMPUTING;
            if (eq_push(&e->q, op->t_end, EQ_COMPUTE, l, 0))
                e->oom = 1;
            e->ops++;
            return;
        case PROG_SIGNAL: {
            e->raised[op->msg] = 1;
            op->t_start = op->t_end = now;
            done(e, l, op);
            int32_t w;
            while ((w = wake_one(e, &e->signal_wait[op->msg])) >= 0) {
                assert(e->lane[w].state == LANE_WAIT_SIGNAL);
                prog_op *wop = &e->ps->lanes[w].ops[e->lane[w].pc];
                wop->t_end = now;
                done(e, w, wop);
                e->lane[w].pc++;
                make_ready(e, w);
            }
            lr->pc++;
            e->ops++;
            continue;
        }
        case PROG_WAIT:
            op->t_start = now;
            if (!e->raised[op->msg]) {
                wait_on(e, &e->signal_wait[op->msg], l);
                lr->state = LANE_WAIT_SIGNAL;
                return;
            }
            op->t_end = now;
            done(e, l, op);
            lr->pc++;
            e->ops++;
            continue;
        default: { /* a batch of SEND/RECV */
            int32_t i = lr->pc, pending = 0;
            for (;;) {
                pending += !post(e, l, &lane->ops[i], now);
                e->ops++;
                if (!(lane->ops[i].flags & PROG_BATCH))
                    break;
                i++;
            }
            if (pending == 0) {
                lr->pc = i + 1;
                continue;
            }
            lr->batch_end = i + 1;
            lr->pending = pending;
            lr->state = LANE_WAIT_BATCH;
            if (e->fp && isfinite(e->fp->recv_timeout)) {
                lr->wait_seq++;
                if (eq_push(&e->q, now + e->fp->recv_timeout, EQ_TIMEOUT, l,
                            lr->wait_seq))
                    e->oom = 1;
            }
            return;
        }
        }
    }
    lr->state = LANE_DONE;
}

static void run_ready(eng_sim *e, double now)
{
    int32_t cap = e->ps->nlanes + 1;
    while (e->ready_n > 0) {
        int32_t l = e->ready[e->ready_head];
        if (++e->ready_head == cap)
            e->ready_head = 0;
        e->ready_n--;
        advance(e, l, now);
    }
}

static void compute_done(eng_sim *e, int32_t l)
{
    prog_lane *lane = &e->ps->lanes[l];
    const prog_op *op = &lane->ops[e->lane[l].pc];
    if (op->type == PROG_DELAY) { /* held no device */
        assert(e->lane[l].state == LANE_COMPUTING);
        done(e, l, op);
        e->lane[l].pc++;
        make_ready(e, l);
        return;
    }
    assert(e->lane[l].state == LANE_COMPUTING && e->device[lane->rank] == l);
    e->busy[l] += op->t_end - op->t_start;
    if (op->mem < 0)
        eng_mem_apply_(e, l, lane->rank, op->t_end, op->mem);
    done(e, l, op);
    e->device[lane->rank] = -1;
    int32_t w = wake_one(e, &e->device_wait[lane->rank]);
    assert(w < 0 || e->lane[w].state == LANE_WAIT_DEVICE);
    if (w >= 0)
        make_ready(e, w); /* FIFO: the waiting lane gets the device first */
    e->lane[l].pc++;
    make_ready(e, l);
}

/* "microbatch 3", or for collective ops "step 2" (a collective) or
 * "bucket 1" (gradient sync; fault_plan.tag_label). */
static void op_unit(const eng_sim *e, const prog_op *op, char *buf, int size)
{
    if (op->mb >= 0 || op->tag < 0)
        snprintf(buf, (size_t)size, "microbatch %d", (int)op->mb);
    else
        snprintf(buf, (size_t)size, "%s %d", e->fp ? e->fp->tag_label : "tag",
                 (int)op->tag);
}

/* Appends to buf what lane l is blocked on. */
static int describe_block(const eng_sim *e, int32_t l, char *buf, int size)
{
    const lane_rt *lr = &e->lane[l];
    const prog_lane *lane = &e->ps->lanes[l];
    int len = 0;
    char what[96];
    if (lr->state == LANE_WAIT_SIGNAL) {
        return snprintf(buf, (size_t)size, "rank %d waits on signal %d",
                        (int)lane->rank, (int)lane->ops[lr->pc].msg);
    }
    if (lr->state == LANE_STALLED || lr->state == LANE_WAIT_DEVICE) {
        /* waiting for the device: only behind a lane of a stalled rank,
         * which left the device free but never took it */
        prog_describe(&lane->ops[lr->pc], what, sizeof what);
        return snprintf(
            buf, (size_t)size, "rank %d %s before %s", (int)lane->rank,
            lr->state == LANE_STALLED ? "stalled" : "waits for its device",
            what);
    }
    for (int32_t i = lr->pc; i < lr->batch_end && len < size; i++) {
        const prog_op *op = &lane->ops[i];
        uint8_t st = e->msg[op->msg];
        int done = (st & MSG_ARRIVED) ||
                   (op->type == PROG_SEND &&
                    (e->p2p == ENG_EAGER || (op->flags & PROG_NOWAIT)));
        if (done)
            continue;
        prog_describe(op, what, sizeof what);
        const char *why =
            st & MSG_LOST ? "lost: the link is down"
            : op->type == PROG_SEND
                ? (st & MSG_RECV_POSTED ? "in flight" : "not yet received")
                : (st & MSG_SEND_POSTED ? "in flight" : "not yet sent");
        char unit[48];
        op_unit(e, op, unit, sizeof unit);
        len += snprintf(buf + len, (size_t)(size - len),
                        "%srank %d waits on %s (%s, %s)", len ? "; " : "",
                        (int)lane->rank, what, unit, why);
    }
    return len;
}

static int deadlock(eng_sim *e, double now, ps_err *err)
{
    char buf[sizeof err->msg];
    int len = snprintf(buf, sizeof buf, "deadlock at t=%.9g s", now);
    if (e->fp) {
        /* the faults that explain it first: the list of ranks may be cut */
        char faults[1024];
        int n = fault_append_active(e->fp, now, faults, 0, sizeof faults);
        if (n > 2)
            len += snprintf(buf + len, sizeof buf - (size_t)len, " (%s)",
                            faults + 2);
    }
    len += snprintf(buf + len, sizeof buf - (size_t)len, ": ");
    int32_t blocked = 0, shown = 0;
    for (int32_t l = 0; l < e->ps->nlanes; l++) {
        if (e->lane[l].state == LANE_DONE)
            continue;
        blocked++;
        if (len > (int)sizeof buf - 200)
            continue;
        if (shown++)
            len += snprintf(buf + len, sizeof buf - (size_t)len, "; ");
        len += describe_block(e, l, buf + len, (int)sizeof buf - len - 64);
    }
    if (shown < blocked)
        snprintf(buf + len, sizeof buf - (size_t)len, "; and %d more ranks",
                 (int)(blocked - shown));
    return ps_errf(err, "%s", buf);
}

/* recv_timeout expired for lane l, blocked in a batch: names the op it
 * waits on (a receive if any), its peer, its microbatch or step, the time
 * and the faults in effect. */
static int deadline(eng_sim *e, int32_t l, double now, ps_err *err)
{
    const lane_rt *lr = &e->lane[l];
    const prog_lane *lane = &e->ps->lanes[l];
    const prog_op *op = NULL;
    for (int32_t i = lr->pc; i < lr->batch_end; i++) {
        const prog_op *o = &lane->ops[i];
        int done = (e->msg[o->msg] & MSG_ARRIVED) ||
                   (o->type == PROG_SEND &&
                    (e->p2p == ENG_EAGER || (o->flags & PROG_NOWAIT)));
        if (!done && (!op || (o->type == PROG_RECV && op->type != PROG_RECV)))
            op = o;
    }
    if (!op) /* a blocked batch has an incomplete op: cannot happen */
        return ps_errf(err, "deadline: rank %d waits on nothing",
                       (int)lane->rank);
    char what[96], at[32], waited[32], unit[48];
    prog_describe(op, what, sizeof what);
    fault_format_time(now, 1, at, sizeof at);
    fault_format_time(e->fp->recv_timeout, 0, waited, sizeof waited);
    op_unit(e, op, unit, sizeof unit);
    char buf[sizeof err->msg];
    int len = snprintf(
        buf, sizeof buf, "deadline at t=%s: rank %d waited %s on %s (%s%s)", at,
        (int)lane->rank, waited, what, unit,
        e->msg[op->msg] & MSG_LOST ? ", lost: the link is down" : "");
    fault_append_active(e->fp, now, buf, len, (int)sizeof buf);
    return ps_errf(err, "%s", buf);
}

/* An EQ_TIMEOUT popped at now: when its lane still waits on the same
 * batch, the lane joins the expired list. Stale ones are dropped. */
static void timeout(eng_sim *e, const eq_event *ev, double now)
{
    lane_rt *lr = &e->lane[ev->id];
    if (lr->state != LANE_WAIT_BATCH || lr->wait_seq != ev->version)
        return;
    lr->expired = ev->version;
    lr->expired_next = -1;
    if (e->expired >= 0)
        e->lane[e->expired_tail].expired_next = ev->id;
    else
        e->expired = ev->id;
    e->expired_tail = ev->id;
    e->expired_t = now;
}

/* 1 when lane l still waits on the batch whose timeout expired; 2 when
 * that batch has a receive that is not complete. */
static int still_waiting(const eng_sim *e, int32_t l)
{
    const lane_rt *lr = &e->lane[l];
    if (lr->state != LANE_WAIT_BATCH || lr->wait_seq != lr->expired)
        return 0;
    const prog_lane *lane = &e->ps->lanes[l];
    for (int32_t i = lr->pc; i < lr->batch_end; i++)
        if (lane->ops[i].type == PROG_RECV &&
            !(e->msg[lane->ops[i].msg] & MSG_ARRIVED))
            return 2;
    return 1;
}

/* Once every event of the instant of the expired lanes has run (a wait
 * that ends exactly at its deadline is on time): fails the run on the
 * first lane still waiting on a receive, else on the first still waiting
 * on a send. */
static int check_expired(eng_sim *e, ps_err *err)
{
    int32_t first = -1;
    for (int32_t l = e->expired; l >= 0; l = e->lane[l].expired_next) {
        int w = still_waiting(e, l);
        if (w == 2)
            return deadline(e, l, e->expired_t, err);
        if (w && first < 0)
            first = l;
    }
    if (first >= 0)
        return deadline(e, first, e->expired_t, err);
    e->expired = -1;
    return PS_OK;
}

int eng_run(eng_sim *e, prog_set *ps, net *nw, enum eng_p2p p2p,
            eng_result *res, ps_err *err)
{
    memset(res, 0, sizeof *res);
    if (net_ranks(nw) != ps->nranks)
        return ps_errf(err, "programs are for %d ranks but the network has %d",
                       (int)ps->nranks, (int)net_ranks(nw));
    if (size_arrays(e, ps))
        return ps_errf(err, "out of memory sizing the engine");
    if (e->fp && fault_check_ranks(e->fp, ps, err))
        return PS_ERR;
    e->ps = ps;
    e->nw = nw;
    e->p2p = p2p;
    e->transfers = e->ops = 0;
    e->oom = 0;
    eq_clear(&e->q);
    net_begin(nw, &e->q);
    for (int32_t l = 0; l < ps->nlanes; l++)
        make_ready(e, l);
    double now = 0;
    run_ready(e, now);
    eq_event ev;
    int64_t events = 0;
    double last = 0; /* time of the last event that did something */
    e->expired = -1;
    for (;;) {
        /* flows that started or ended at this instant share one solve,
         * before time moves on (net/net.h), and before a timeout's check
         * looks at what is left in the queue */
        if (!e->oom && net_settle(nw))
            e->oom = 1;
        eq_event next;
        if (e->expired >= 0 &&
            (eq_peek(&e->q, &next) != 0 || next.t > e->expired_t) &&
            check_expired(e, err))
            return PS_ERR;
        if (e->oom || eq_pop(&e->q, &ev) != 0)
            break;
        /* a stop (signal, --timeout, memory: base/limit.h) ends the run at an
         * event boundary; polled every 4096 events, a load and a branch */
        if ((++events & 4095) == 0 && limit_stopped())
            return ps_errf(err, "stopped at t=%.9g s after %lld events", now,
                           (long long)events);
        now = ev.t;
        if (ev.type == EQ_COMPUTE) {
            compute_done(e, ev.id);
        } else if (ev.type == EQ_TIMEOUT) {
            timeout(e, &ev, now);
            continue; /* changes nothing: not the run's last event */
        } else {
            int32_t id = net_event(nw, &ev);
            if (id < 0)
                continue; /* stale, or a data phase whose latency runs */
            arrived(e, id, now);
        }
        last = now;
        run_ready(e, now);
    }
    now = last;
    if (e->oom)
        return ps_errf(err, "out of memory during the run");
    res->makespan = now;
    res->events = events;
    res->ops = e->ops;
    res->transfers = e->transfers;
    for (int32_t l = 0; l < ps->nlanes; l++)
        if (e->lane[l].state != LANE_DONE)
            return deadlock(e, now, err);
    return PS_OK;
}
