/* Engine, cursor path: runs a generated program (gen.h) with the array
 * path's semantics and event order (eng.c), so both give the same times
 * bit for bit. A lane holds its current op or batch in a small buffer and
 * asks the generator for the next one when it moves on; messages match by
 * channel sequence numbers through per-channel FIFO queues of posts not yet
 * met; a message in flight is one record from a pool (free list), released
 * when both sides are complete. Memory: O(lanes x max_batch + channels +
 * messages in flight), never O(ops). No faults and no recv_timeout here:
 * callers run those as arrays. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng.h"
#include "eng_impl.h"
#include "limit.h"

#define CHAN_NO_PAIR INT32_MIN

enum cmsg_bits {
    CM_SEND_POSTED = 1,
    CM_RECV_POSTED = 2,
    CM_STARTED = 4,
    CM_ARRIVED = 8
};

/* One message from its first post to its completion. What the transfer
 * and the arrival need of the SEND is kept here: an eager or NOWAIT send
 * completes for its lane, which moves on, before its bytes arrive. With a
 * completion hook the whole SEND is copied too (eng_cursor.sop). */
typedef struct cmsg {
    double bytes;
    int64_t send_index;
    int32_t send_lane, send_rank, peer;
    int32_t recv_lane, recv_slot; /* the RECV sits in its lane's buffer */
    int32_t next;                 /* channel queue or free list */
    int32_t chan;                 /* its channel */
    uint8_t st;                   /* enum cmsg_bits */
    uint8_t sflags;               /* the SEND's flags */
} cmsg;

/* Posts of one channel not yet met by the other side, oldest first; all
 * of one side (a post of the other side meets the oldest). */
typedef struct chan {
    int32_t head, tail;
    int32_t pair;  /* net_pair of its ranks, CHAN_NO_PAIR before the first
                      transfer */
    uint8_t sends; /* 1: the queue holds SENDs, 0: RECVs */
} chan;

typedef struct clane {
    int64_t index; /* index of the first op in the buffer */
    int32_t rank;
    int32_t pending; /* incomplete ops of the current batch */
    int32_t next;    /* device wait list */
    int32_t nbuf;    /* ops of the current batch or compute op, 0: none */
    int32_t nops;    /* ops of the last batch fetched */
    uint8_t state;   /* enum lane_state */
} clane;

struct eng_cursor {
    clane *lane;
    int32_t lane_cap;
    prog_op *buf; /* max_batch per lane */
    int64_t buf_cap;
    unsigned char *state;
    size_t state_cap;
    chan *chan;
    int32_t chan_cap;
    cmsg *msg;
    prog_op *sop; /* msg_cap entries: the SENDs, kept only with a hook */
    int32_t msg_cap, msg_used, free_msg;
    /* the run */
    const gen_prog *g;
    int32_t B;         /* max_batch */
    int32_t ready_cap; /* entries of the ready ring: nlanes + 1 */
    uint32_t nch;      /* channels, unsigned for one comparison */
    size_t state_bytes;
    int (*next)(const gen_prog *g, int32_t lane, void *state, prog_op *ops);
    int hook; /* e->sink.op_done is set */
    /* a FIFO mesh: transfers start inline (net_mesh_fifo) */
    int mesh;
    net_lstat *slots;
    double bw, lat;
    int bad; /* the generator broke its contract: message in err */
    char bad_msg[160];
};

void eng_cursor_free_(eng_sim *e)
{
    eng_cursor *c = e->cur;
    if (!c)
        return;
    limit_free(c->lane);
    limit_free(c->buf);
    limit_free(c->state);
    limit_free(c->chan);
    limit_free(c->msg);
    limit_free(c->sop);
    free(c);
    e->cur = NULL;
}

static int size_cursor(eng_sim *e, const gen_prog *g)
{
    if (!e->cur && !(e->cur = calloc(1, sizeof *e->cur)))
        return -1;
    eng_cursor *c = e->cur;
    int64_t nb = (int64_t)g->nlanes * g->max_batch;
    size_t sb = (size_t)g->nlanes * g->state_bytes;
    if (eng_reserve_((void **)&c->lane, &c->lane_cap, g->nlanes,
                     sizeof *c->lane) ||
        eng_reserve_((void **)&c->chan, &c->chan_cap, g->nchannels,
                     sizeof *c->chan))
        return -1;
    if (nb >= INT32_MAX) /* cmsg.recv_slot */
        return -1;
    if (nb + 1 > c->buf_cap) {
        limit_free(c->buf);
        c->buf_cap = 0;
        c->buf = limit_malloc((size_t)(nb + 1) * sizeof *c->buf);
        if (!c->buf)
            return -1;
        c->buf_cap = nb + 1;
    }
    if (sb + 1 > c->state_cap) {
        limit_free(c->state);
        c->state_cap = 0;
        if (!(c->state = limit_malloc(sb + 1)))
            return -1;
        c->state_cap = sb + 1;
    }
    memset(c->state, 0, sb);
    for (int32_t l = 0; l < g->nlanes; l++)
        c->lane[l] = (clane){0, g->rank(g, l), 0, -1, 0, 0, LANE_READY};
    for (int32_t k = 0; k < g->nchannels; k++)
        c->chan[k] = (chan){-1, -1, CHAN_NO_PAIR, 0};
    c->msg_used = 0;
    c->free_msg = -1;
    c->g = g;
    c->B = g->max_batch;
    c->ready_cap = g->nlanes + 1;
    c->nch = (uint32_t)g->nchannels;
    c->state_bytes = g->state_bytes;
    c->next = g->next;
    c->hook = e->sink.op_done != NULL;
    c->bad = 0;
    return eng_begin_stats_(e, g->nlanes, g->nranks);
}

/* The per-op path is one loop (run_ready) with everything it calls
 * inlined; what runs once per run or on a failure stays out of it. */
#define HOT static inline __attribute__((always_inline))
#define COLD static __attribute__((noinline, cold))

/* The message pool is full: grow it geometrically (it reaches the most
 * messages in flight once). */
COLD int32_t msg_grow(eng_sim *e)
{
    eng_cursor *c = e->cur;
    if (c->msg_cap > INT32_MAX / 2) {
        e->oom = 1;
        return -1;
    }
    int32_t cap = c->msg_cap ? c->msg_cap * 2 : 1024;
    cmsg *p = limit_realloc(c->msg, (size_t)cap * sizeof *p);
    if (p)
        c->msg = p;
    prog_op *o = limit_realloc(c->sop, (size_t)cap * sizeof *o);
    if (o)
        c->sop = o;
    if (!p || !o) {
        e->oom = 1;
        return -1;
    }
    c->msg_cap = cap;
    return c->msg_used++;
}

HOT int32_t msg_alloc(eng_sim *e, eng_cursor *c)
{
    int32_t m = c->free_msg;
    if (m >= 0) {
        c->free_msg = c->msg[m].next;
        return m;
    }
    if (c->msg_used < c->msg_cap)
        return c->msg_used++;
    return msg_grow(e);
}

HOT void msg_release(eng_cursor *c, int32_t m)
{
    c->msg[m].next = c->free_msg;
    c->free_msg = m;
}

/* The message a post of the given side on channel k belongs to: the
 * oldest post of the other side, or a new record queued on k. */
HOT int32_t match(eng_sim *e, eng_cursor *c, int32_t k, int send)
{
    chan *ch = &c->chan[k];
    if (ch->head >= 0 && ch->sends != send) {
        int32_t m = ch->head;
        ch->head = c->msg[m].next;
        if (ch->head < 0)
            ch->tail = -1;
        return m;
    }
    int32_t m = msg_alloc(e, c);
    if (m < 0)
        return -1;
    cmsg *x = &c->msg[m];
    x->st = 0;
    x->next = -1;
    x->chan = k;
    if (ch->tail >= 0)
        c->msg[ch->tail].next = m;
    else
        ch->head = m;
    ch->tail = m;
    ch->sends = (uint8_t)send;
    return m;
}

HOT void done(eng_sim *e, int32_t l, const prog_op *op, int64_t idx)
{
    if (!e->cur->hook)
        return;
    eng_done d = {op, idx, l, e->cur->lane[l].rank};
    e->sink.op_done(e->sink.ctx, &d);
}

HOT void make_ready(eng_sim *e, int32_t l)
{
    int32_t cap = e->cur->ready_cap, i = e->ready_head + e->ready_n;
    e->ready[i >= cap ? i - cap : i] = l;
    e->ready_n++;
    e->cur->lane[l].state = LANE_READY;
}

/* start_transfer for a channel whose pair is not cached, or not on a FIFO
 * mesh: looks the pair up once per channel, then starts through net.h. */
COLD void start_slow(eng_sim *e, eng_cursor *c, int32_t m, double now,
                     double *t_begin)
{
    cmsg *x = &c->msg[m];
    chan *ch = &c->chan[x->chan];
    if (ch->pair == CHAN_NO_PAIR) {
        ch->pair = net_pair(e->nw, x->send_rank, x->peer);
        /* net_pair may have moved the slots */
        c->mesh = net_mesh_fifo(e->nw, &c->slots, &c->bw, &c->lat);
    }
    if (ch->pair == -1) {
        e->oom = 1;
        return;
    }
    if (ch->pair >= 0 && c->mesh) {
        double end = net_mesh_start(&c->slots[ch->pair], c->bw, c->lat,
                                    x->bytes, now, t_begin);
        if (eq_push(&e->q, end, EQ_NET, m, 0))
            e->oom = 1;
        return;
    }
    if (net_start_pair(e->nw, ch->pair, m, x->send_rank, x->peer, x->bytes, now,
                       t_begin))
        e->oom = 1;
}

HOT void start_transfer(eng_sim *e, eng_cursor *c, int32_t m, double now)
{
    cmsg *x = &c->msg[m];
    int32_t pair = c->chan[x->chan].pair;
    x->st |= CM_STARTED;
    e->transfers++;
    double t_begin = now;
    if (pair >= 0 && c->mesh) {
        double end = net_mesh_start(&c->slots[pair], c->bw, c->lat, x->bytes,
                                    now, &t_begin);
        if (eq_push(&e->q, end, EQ_NET, m, 0))
            e->oom = 1;
    } else {
        start_slow(e, c, m, now, &t_begin);
    }
    if (c->hook)
        c->sop[m].t_start = t_begin;
}

HOT int post_send(eng_sim *e, eng_cursor *c, int32_t l, const prog_op *op,
                  int64_t idx, double now)
{
    int32_t m = match(e, c, op->msg, 1);
    if (m < 0)
        return 1;
    cmsg *x = &c->msg[m];
    x->bytes = op->bytes;
    x->send_index = idx;
    x->send_lane = l;
    x->send_rank = c->lane[l].rank;
    x->peer = op->peer;
    x->sflags = op->flags;
    if (c->hook)
        c->sop[m] = *op;
    x->st |= CM_SEND_POSTED;
    if (e->p2p == ENG_EAGER || (op->flags & PROG_EARLY)) {
        start_transfer(e, c, m, now);
        return 1;
    }
    if (x->st & CM_RECV_POSTED)
        start_transfer(e, c, m, now);
    return (op->flags & PROG_NOWAIT) != 0;
}

HOT int post_recv(eng_sim *e, eng_cursor *c, int32_t l, int32_t slot,
                  double now)
{
    prog_op *op = &c->buf[slot];
    op->t_start = now;
    int32_t m = match(e, c, op->msg, 0);
    if (m < 0)
        return 1;
    cmsg *x = &c->msg[m];
    x->recv_lane = l;
    x->recv_slot = slot;
    x->st |= CM_RECV_POSTED;
    if (x->st & CM_ARRIVED) {
        op->t_end = now;
        done(e, l, op, c->lane[l].index + (slot - (int64_t)l * c->B));
        msg_release(c, m);
        return 1;
    }
    if (e->p2p == ENG_RENDEZVOUS && (x->st & CM_SEND_POSTED) &&
        !(x->st & CM_STARTED))
        start_transfer(e, c, m, now);
    return 0;
}

HOT void complete_one(eng_sim *e, eng_cursor *c, int32_t l)
{
    clane *lr = &c->lane[l];
    if (--lr->pending == 0) {
        lr->nbuf = 0;
        make_ready(e, l);
    }
}

HOT void arrived(eng_sim *e, int32_t m, double now)
{
    eng_cursor *c = e->cur;
    cmsg *x = &c->msg[m];
    x->st |= CM_ARRIVED;
    if (c->hook) {
        c->sop[m].t_end = now;
        done(e, x->send_lane, &c->sop[m], x->send_index);
    }
    if (e->p2p == ENG_RENDEZVOUS && !(x->sflags & PROG_NOWAIT))
        complete_one(e, c, x->send_lane);
    if (x->st & CM_RECV_POSTED) {
        prog_op *recv = &c->buf[x->recv_slot];
        recv->t_end = now;
        done(e, x->recv_lane, recv,
             c->lane[x->recv_lane].index +
                 (x->recv_slot - (int64_t)x->recv_lane * c->B));
        complete_one(e, c, x->recv_lane);
        msg_release(c, m);
    }
}

COLD void bad(eng_sim *e, int32_t l, const char *why)
{
    eng_cursor *c = e->cur;
    if (!c->bad)
        snprintf(c->bad_msg, sizeof c->bad_msg,
                 "generated program: rank %d, op %lld: %s",
                 (int)c->lane[l].rank,
                 (long long)(c->lane[l].index + c->lane[l].nops), why);
    c->bad = 1;
}

/* Fills lane l's buffer with its next compute op or batch; 0 when the
 * lane has no more ops. */
HOT int fetch(eng_sim *e, eng_cursor *c, int32_t l)
{
    clane *lr = &c->lane[l];
    prog_op *b = c->buf + (int64_t)l * c->B;
    int32_t n = c->next(c->g, l, c->state + (size_t)l * c->state_bytes, b);
    if (n <= 0)
        return 0;
    lr->index += lr->nops;
    lr->nops = n;
    /* gen.h's contract, one pass without branches per op: a lone compute
     * op, or SEND/RECV ops on its channels, PROG_BATCH on all but the
     * last */
    unsigned wrong = (unsigned)n > (unsigned)c->B;
    if (!wrong && (n > 1 || b[0].type != PROG_COMPUTE)) {
        /* PROG_SEND and PROG_RECV are 1 and 2 */
        for (int32_t i = 0; i + 1 < n; i++)
            wrong |= ((unsigned)b[i].type - PROG_SEND > 1u) |
                     ((uint32_t)b[i].msg >= c->nch) |
                     (~b[i].flags & PROG_BATCH);
        const prog_op *o = &b[n - 1];
        wrong |= ((unsigned)o->type - PROG_SEND > 1u) |
                 ((uint32_t)o->msg >= c->nch) | (o->flags & PROG_BATCH);
    }
    if (wrong) {
        bad(e, l,
            n > c->B ? "a batch longer than max_batch"
                     : "not an op, a batch or a channel of its program");
        return 0;
    }
    lr->nbuf = n;
    return 1;
}

/* A compute op of lane l whose rank's device is busy: it waits in the
 * device's FIFO list. */
HOT void wait_device(eng_sim *e, eng_cursor *c, int32_t l)
{
    clane *lr = &c->lane[l];
    lr->next = -1;
    wait_list *w = &e->device_wait[lr->rank];
    if (w->tail >= 0)
        c->lane[w->tail].next = l;
    else
        w->head = l;
    w->tail = l;
    lr->state = LANE_WAIT_DEVICE;
}

HOT void advance(eng_sim *e, eng_cursor *c, int32_t l, double now)
{
    clane *lr = &c->lane[l];
    for (;;) {
        if (lr->nbuf == 0 && !fetch(e, c, l)) {
            lr->state = LANE_DONE;
            return;
        }
        int64_t base = (int64_t)l * c->B;
        prog_op *op = &c->buf[base];
        if (op->type == PROG_COMPUTE) {
            if (e->device[lr->rank] >= 0) {
                wait_device(e, c, l);
                return;
            }
            e->device[lr->rank] = l;
            op->t_start = now;
            op->t_end = now + op->seconds;
            lr->state = LANE_COMPUTING;
            if (op->mem > 0)
                eng_mem_apply_(e, l, lr->rank, now, op->mem);
            if (eq_push(&e->q, op->t_end, EQ_COMPUTE, l, 0))
                e->oom = 1;
            e->ops++;
            return;
        }
        int32_t pending = 0, n = lr->nbuf;
        for (int32_t i = 0; i < n; i++) {
            int64_t s = base + i;
            pending += c->buf[s].type == PROG_SEND
                           ? !post_send(e, c, l, &c->buf[s], lr->index + i, now)
                           : !post_recv(e, c, l, (int32_t)s, now);
        }
        e->ops += n;
        if (pending == 0) {
            lr->nbuf = 0;
            continue;
        }
        lr->pending = pending;
        lr->state = LANE_WAIT_BATCH;
        return;
    }
}

HOT void compute_done(eng_sim *e, int32_t l)
{
    eng_cursor *c = e->cur;
    clane *lr = &c->lane[l];
    int64_t base = (int64_t)l * c->B;
    const prog_op *op = &c->buf[base];
    e->busy[l] += op->t_end - op->t_start;
    if (op->mem < 0)
        eng_mem_apply_(e, l, lr->rank, op->t_end, op->mem);
    done(e, l, op, lr->index);
    e->device[lr->rank] = -1;
    wait_list *w = &e->device_wait[lr->rank];
    int32_t next = w->head;
    if (next >= 0) {
        w->head = c->lane[next].next;
        if (w->head < 0)
            w->tail = -1;
        make_ready(e, next); /* FIFO: the waiting lane gets the device */
    }
    lr->nbuf = 0;
    make_ready(e, l);
}

HOT void run_ready(eng_sim *e, double now)
{
    eng_cursor *c = e->cur;
    int32_t cap = c->ready_cap;
    while (e->ready_n > 0) {
        int32_t l = e->ready[e->ready_head];
        if (++e->ready_head == cap)
            e->ready_head = 0;
        e->ready_n--;
        advance(e, c, l, now);
    }
}

static int deadlock(eng_sim *e, double now, ps_err *err)
{
    eng_cursor *c = e->cur;
    char buf[sizeof err->msg];
    int len = snprintf(buf, sizeof buf, "deadlock at t=%.9g s: ", now);
    int32_t blocked = 0, shown = 0;
    for (int32_t l = 0; l < c->g->nlanes; l++) {
        if (c->lane[l].state == LANE_DONE)
            continue;
        blocked++;
        if (len > (int)sizeof buf - 200)
            continue;
        char what[96];
        prog_describe(&c->buf[(int64_t)l * c->B], what, sizeof what);
        len += snprintf(buf + len, sizeof buf - (size_t)len,
                        "%srank %d waits on %s", shown++ ? "; " : "",
                        (int)c->lane[l].rank, what);
    }
    if (shown < blocked)
        snprintf(buf + len, sizeof buf - (size_t)len, "; and %d more ranks",
                 (int)(blocked - shown));
    return ps_errf(err, "%s", buf);
}

int eng_run_gen(eng_sim *e, const gen_prog *g, net *nw, enum eng_p2p p2p,
                eng_result *res, ps_err *err)
{
    memset(res, 0, sizeof *res);
    if (net_ranks(nw) != g->nranks)
        return ps_errf(err, "programs are for %d ranks but the network has %d",
                       (int)g->nranks, (int)net_ranks(nw));
    if (g->max_batch < 1 || g->nlanes < 0 || g->nchannels < 0)
        return ps_errf(err, "generated program: bad shape");
    if (size_cursor(e, g))
        return ps_errf(err, "out of memory sizing the engine");
    e->ps = NULL;
    e->nw = nw;
    e->p2p = p2p;
    e->transfers = e->ops = 0;
    e->oom = 0;
    eq_clear(&e->q);
    net_begin(nw, &e->q);
    int fifo = net_sharing_of(nw) == NET_FIFO;
    e->cur->mesh = net_mesh_fifo(nw, &e->cur->slots, &e->cur->bw, &e->cur->lat);
    for (int32_t l = 0; l < g->nlanes; l++)
        make_ready(e, l);
    run_ready(e, 0);
    eq_event ev;
    int64_t events = 0;
    double now = 0, last = 0;
    while (!e->oom && !e->cur->bad && eq_pop(&e->q, &ev) == 0) {
        if ((++events & 4095) == 0 && limit_stopped())
            return ps_errf(err, "stopped at t=%.9g s after %lld events", now,
                           (long long)events);
        now = ev.t;
        if (ev.type == EQ_COMPUTE) {
            compute_done(e, ev.id);
        } else {
            /* FIFO: every EQ_NET event is the arrival of transfer ev.id
             * (net.h) */
            int32_t id = fifo ? ev.id : net_event(nw, &ev);
            if (id < 0)
                continue; /* stale or internal (FAIR) */
            arrived(e, id, now);
        }
        last = now;
        run_ready(e, now);
    }
    if (e->cur->bad)
        return ps_errf(err, "%s", e->cur->bad_msg);
    if (e->oom)
        return ps_errf(err, "out of memory during the run");
    res->makespan = last;
    res->events = events;
    res->ops = e->ops;
    res->transfers = e->transfers;
    for (int32_t l = 0; l < g->nlanes; l++)
        if (e->cur->lane[l].state != LANE_DONE)
            return deadlock(e, last, err);
    return PS_OK;
}
