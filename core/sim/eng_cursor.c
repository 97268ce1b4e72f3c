/* Engine, cursor path: runs a generated program (sim/gen.h) with the array
 * path's semantics and event order (sim/eng.c), so both give the same times
 * bit for bit. A lane holds its current op or batch in a small buffer and
 * asks the generator for the next one when it moves on; messages match by
 * channel sequence numbers through per-channel FIFO queues of posts not yet
 * met; a message in flight is one record from a pool (free list), released
 * when both sides are complete. Memory: O(lanes x max_batch + channels +
 * messages in flight), never O(ops). No faults and no recv_timeout here:
 * callers run those as arrays.
 * This file is the per-event loop, one static inline body compiled once per
 * case (any generator with and without a hook, the ring lockstep and
 * slotted), and what reads its records after it (the batch checks, the
 * deadlock and drain diagnostics). The records themselves (lanes, channels,
 * messages) and their sizing, which runs once per run, are
 * sim/eng_cursor_state.h and .c, below this file: the loop reads them
 * directly, with no call on the hot path. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"
#include "sim/eng.h"
#include "sim/eng_cursor_state.h"
#include "sim/eng_impl.h"
#include "sim/gen_ring.h"

/* The per-op path is one loop (run_loop) with everything it calls
 * inlined; what runs once per run or on a failure stays out of it. Its
 * functions take H (a completion hook is set) and K (enum gen_kind) as
 * constants, so the loop is compiled once per case, without the hook's
 * tests where there is none and with the ring's step inlined. No ready
 * ring: on this path only an event makes lanes ready (a compute end its
 * lane and the device's next, an arrival its two sides; posting never
 * completes another lane's op), so the lanes an event readies are
 * advanced right after it, in the order the array path's ring runs
 * them. */
#define HOT inline __attribute__((always_inline))
#define COLD __attribute__((noinline, cold))

/* The message pool is full: grow it geometrically (it reaches the most
 * messages in flight once). */
static COLD int32_t msg_grow(eng_sim *e, int H)
{
    eng_cursor *c = e->cur;
    /* only a full pool grows: no free record, none unused */
    assert(c->free_msg < 0 && c->msg_used == c->msg_cap);
    if (c->msg_cap > INT32_MAX / 2) {
        e->oom = 1;
        return -1;
    }
    int32_t cap = c->msg_cap * 2;
    cmsg *p = limit_realloc(c->msg, (size_t)cap * sizeof *p);
    if (p)
        c->msg = p;
    if (!p || (H && eng_cursor_hook_grow_(c, cap))) {
        e->oom = 1;
        return -1;
    }
    c->msg_cap = cap;
    return c->msg_used++;
}

/* A record for a message on channel k: one of its own if free, else the
 * pool's. */
static HOT int32_t msg_alloc(eng_sim *e, eng_cursor *c, chan *ch, int32_t k,
                             int H)
{
    uint8_t own = ch->own;
    if (own != 3) {
        int32_t b = own & 1; /* the free one: 0 if it is, else 1 */
        ch->own = (uint8_t)(own | (b + 1));
        return 2 * k + b;
    }
    int32_t m = c->free_msg;
    if (m >= 0) {
        c->free_msg = c->msg[m].next;
        return m;
    }
    if (c->msg_used < c->msg_cap)
        return c->msg_used++;
    return msg_grow(e, H);
}

static HOT void msg_release(eng_cursor *c, int32_t m)
{
    if ((uint32_t)m < 2 * c->nch) {
        c->chan[m >> 1].own &= (uint8_t)(2 - (m & 1)); /* clears bit m & 1 */
        return;
    }
    c->msg[m].next = c->free_msg;
    c->free_msg = m;
}

/* A new record for a post that meets nothing, queued on channel k (whose
 * queue holds posts of its side or none). */
static HOT int32_t enqueue(eng_sim *e, eng_cursor *c, chan *ch, int32_t k,
                           uint8_t sends, int H)
{
    int32_t m = msg_alloc(e, c, ch, k, H);
    if (m < 0)
        return -1;
    c->msg[m].next = -1;
    if (ch->tail >= 0)
        c->msg[ch->tail].next = m;
    else
        ch->head = m;
    ch->tail = m;
    ch->sends = sends;
    return m;
}

/* Takes the oldest post, x, off channel ch's queue. */
static HOT void dequeue(chan *ch, const cmsg *x)
{
    ch->head = x->next;
    if (ch->head < 0)
        ch->tail = -1;
}

static HOT void done(eng_sim *e, int32_t l, const prog_op *op, int64_t idx)
{
    eng_done d = {op, idx, l, e->cur->lane[l].rank};
    e->sink.op_done(e->sink.ctx, &d);
}

/* A RECV's index in its lane's program, from its slot in the buffer. */
static HOT int64_t recv_index(const eng_cursor *c, int32_t l, int32_t slot)
{
    return c->lane[l].index + (slot - (int64_t)l * c->B);
}

/* The transfer of message m through net/net.h: for a channel whose pair is
 * not cached (looked up once per channel) or not on a FIFO mesh. A
 * slotted send leaves behind the channel's one before it, as in sim/eng.c's
 * start_transfer (net_start_conn). */
static COLD void start_slow(eng_sim *e, eng_cursor *c, chan *ch, int32_t m,
                            double bytes, double now, double *t_begin,
                            int slotted)
{
    if (ch->pair == CHAN_NO_PAIR) {
        assert(ch->src >= 0); /* its first SEND named the ranks */
        ch->pair = net_pair(e->nw, ch->src, ch->dst);
        /* net_pair may have moved the slots */
        c->mesh = net_mesh_fifo(e->nw, &c->slots, &c->bw, &c->lat);
    }
    if (ch->pair == -1) {
        eng_cursor_note_need_(e, c->g, c->sop_cap > 0);
        e->oom = 1;
        return;
    }
    if (ch->pair >= 0 && c->mesh) {
        double end = net_mesh_start(&c->slots[ch->pair], c->bw, c->lat, bytes,
                                    now, t_begin);
        if (eq_push(&e->q, end, EQ_NET, m, 0))
            e->oom = 1;
        return;
    }
    if (slotted && ch->pair < 0
            ? net_start_conn(e->nw, &ch->conn, (int32_t)(ch - c->chan), m,
                             ch->src, ch->dst, bytes, now, t_begin)
            : net_start_pair(e->nw, ch->pair, m, ch->src, ch->dst, bytes, now,
                             t_begin))
        e->oom = 1;
}

/* Starts message m (x) on channel ch; the caller sets CM_STARTED. */
static HOT void start_transfer(eng_sim *e, eng_cursor *c, chan *ch, int32_t m,
                               const cmsg *x, double now, int H, int slotted)
{
    int32_t pair = ch->pair;
    e->transfers++;
    double t_begin = now;
    if (pair >= 0 && c->mesh) {
        double end = net_mesh_start(&c->slots[pair], c->bw, c->lat, x->bytes,
                                    now, &t_begin);
        if (eq_push(&e->q, end, EQ_NET, m, 0))
            e->oom = 1;
    } else {
        start_slow(e, c, ch, m, x->bytes, now, &t_begin, slotted);
    }
    if (H)
        c->sop[m].t_start = t_begin;
}

/* Posts a SEND of lane l on channel k to rank peer: bytes and flags of
 * the op, which with a hook (H) is op, the lane's index-th; 1 when it is
 * complete for its lane already. */
static HOT int post_send(eng_sim *e, eng_cursor *c, int32_t l, int32_t k,
                         int32_t peer, double bytes, uint8_t flags,
                         const prog_op *op, int64_t idx, double now, int H)
{
    int32_t m;
    chan *ch = &c->chan[k];
    uint8_t st;
    if (ch->head >= 0 && !ch->sends) { /* its RECV is posted */
        m = ch->head;
        dequeue(ch, &c->msg[m]);
        st = CM_RECV_POSTED;
    } else {
        if ((m = enqueue(e, c, ch, k, 1, H)) < 0)
            return 1;
        st = 0;
    }
    if (peer >= 0 && ch->src < 0) { /* peer -1: named before the run */
        ch->src = c->lane[l].rank;
        ch->dst = peer;
    }
    cmsg *x = &c->msg[m];
    x->bytes = bytes;
    x->send_lane = l;
    if (H) {
        c->sop[m] = *op;
        c->sidx[m] = idx;
    }
    st |= CM_SEND_POSTED | (flags & PROG_NOWAIT ? 0 : c->waits);
    if (c->eager || (flags & PROG_EARLY)) {
        x->st = st | CM_STARTED;
        start_transfer(e, c, ch, m, x, now, H, (flags & PROG_EARLY) != 0);
        return 1;
    }
    if (st & CM_RECV_POSTED) {
        x->st = st | CM_STARTED;
        start_transfer(e, c, ch, m, x, now, H, 0);
    } else {
        x->st = st;
    }
    return (flags & PROG_NOWAIT) != 0;
}

/* Posts a RECV of lane l on channel k, the op in buffer slot `slot`
 * (whose times are kept only with a hook, H); 1 when it is complete
 * already (its bytes arrived before it was posted). */
static HOT int post_recv(eng_sim *e, eng_cursor *c, int32_t l, int32_t k,
                         int32_t slot, double now, int H)
{
    prog_op *op = &c->buf[slot];
    if (H)
        op->t_start = now;
    int32_t m;
    chan *ch = &c->chan[k];
    if (ch->head >= 0 && ch->sends) { /* its SEND is posted */
        m = ch->head;
        cmsg *x = &c->msg[m];
        dequeue(ch, x);
        uint8_t st = x->st;
        if (st & CM_ARRIVED) {
            if (H) {
                op->t_end = now;
                done(e, l, op, recv_index(c, l, slot));
            }
            msg_release(c, m);
            return 1;
        }
        x->recv_lane = l;
        if (H)
            c->rslot[m] = slot;
        /* rendezvous: the transfer starts now unless it has */
        uint8_t start = c->starts & ~st;
        x->st = st | CM_RECV_POSTED | start;
        if (start)
            start_transfer(e, c, ch, m, x, now, H, 0);
        return 0;
    }
    if ((m = enqueue(e, c, ch, k, 0, H)) < 0)
        return 1;
    cmsg *x = &c->msg[m];
    x->recv_lane = l;
    if (H)
        c->rslot[m] = slot;
    x->st = CM_RECV_POSTED;
    return 0;
}

/* One op of lane l's batch completed: l when it was the last (the lane
 * is ready), else -1. */
static HOT int32_t complete_one(eng_cursor *c, int32_t l)
{
    clane *lr = &c->lane[l];
    if (--lr->pending != 0)
        return -1;
    lr->nbuf = 0;
    lr->state = LANE_READY;
    return l;
}

/* Message m's bytes arrived: the lanes it readies, in order, go to *r0
 * and *r1 (-1: none). */
static HOT void arrived(eng_sim *e, eng_cursor *c, int32_t m, double now,
                        int32_t *r0, int32_t *r1, int H)
{
    cmsg *x = &c->msg[m];
    uint8_t st = x->st | CM_ARRIVED;
    x->st = st;
    if (H) {
        c->sop[m].t_end = now;
        net_event_queued(e->nw, &c->sop[m].t_start); /* waited (sim/eng.c) */
        done(e, x->send_lane, &c->sop[m], c->sidx[m]);
    }
    *r0 = st & CM_SEND_WAITS ? complete_one(c, x->send_lane) : -1;
    *r1 = -1;
    if (st & CM_RECV_POSTED) {
        if (H) {
            prog_op *recv = &c->buf[c->rslot[m]];
            recv->t_end = now;
            done(e, x->recv_lane, recv,
                 recv_index(c, x->recv_lane, c->rslot[m]));
        }
        *r1 = complete_one(c, x->recv_lane);
        msg_release(c, m);
    }
}

static COLD void bad(eng_sim *e, int32_t l, const char *why)
{
    eng_cursor *c = e->cur;
    if (!c->bad)
        snprintf(c->bad_msg, sizeof c->bad_msg,
                 "generated program: rank %d, op %lld: %s",
                 (int)c->lane[l].rank,
                 (long long)(c->lane[l].index + c->lane[l].nops), why);
    c->bad = 1;
    e->oom = 1; /* stops the loop, which tests one flag; c->bad says why */
}

/* sim/gen.h's contract for a batch b of n ops of lane l, checked for
 * generators that are not trusted: a lone compute op, or SEND/RECV ops on
 * its channels, PROG_BATCH on all but the last, each channel between the
 * two ranks its first SEND named. 0 when it holds. */
static int check_batch(eng_sim *e, eng_cursor *c, int32_t l, const prog_op *b,
                       int32_t n)
{
    if (n > c->B) {
        bad(e, l, "a batch longer than max_batch");
        return -1;
    }
    if (n == 1 && b[0].type == PROG_COMPUTE)
        return 0;
    int32_t rank = c->lane[l].rank;
    for (int32_t i = 0; i < n; i++) {
        const prog_op *o = &b[i];
        int last = i + 1 == n;
        if ((o->type != PROG_SEND && o->type != PROG_RECV) ||
            (uint32_t)o->msg >= c->nch || (!(o->flags & PROG_BATCH)) != last) {
            bad(e, l, "not an op, a batch or a channel of its program");
            return -1;
        }
        const chan *ch = &c->chan[o->msg];
        int send = o->type == PROG_SEND;
        if (ch->src >= 0 && (send ? ch->src != rank || ch->dst != o->peer
                                  : ch->dst != rank || ch->src != o->peer)) {
            bad(e, l, "a channel between two other ranks");
            return -1;
        }
    }
    return 0;
}

/* Fills lane l's buffer b with its next compute op or batch; 0 when the
 * lane has no more ops (or its generator broke the contract). */
static HOT int fetch(eng_sim *e, eng_cursor *c, int32_t l, clane *lr,
                     prog_op *b, int K)
{
    void *state = c->state + (size_t)l * c->state_bytes;
    (void)K; /* GEN_RING runs advance_ring, which never fetches */
    int32_t n = c->next(c->g, l, state, b);
    if (n <= 0)
        return 0;
    lr->index += lr->nops;
    lr->nops = n;
    if (!c->trusted && check_batch(e, c, l, b, n))
        return 0;
    lr->nbuf = n;
    return 1;
}

/* A compute op of lane l whose rank's device is busy: it waits in the
 * device's FIFO list. */
static HOT void wait_device(eng_sim *e, eng_cursor *c, int32_t l)
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

static HOT void advance(eng_sim *e, eng_cursor *c, int32_t l, double now, int H,
                        int K)
{
    clane *lr = &c->lane[l];
    int64_t base = (int64_t)l * c->B;
    prog_op *b = &c->buf[base];
    for (;;) {
        if (lr->nbuf == 0 && !fetch(e, c, l, lr, b, K)) {
            lr->state = LANE_DONE;
            return;
        }
        if (K != GEN_RING && b->type == PROG_COMPUTE) {
            if (e->device[lr->rank] >= 0) {
                wait_device(e, c, l);
                return;
            }
            e->device[lr->rank] = l;
            b->t_start = now;
            b->t_end = now + b->seconds;
            lr->state = LANE_COMPUTING;
            if (b->mem > 0)
                eng_mem_apply_(e, l, lr->rank, now, b->mem);
            if (eq_push(&e->q, b->t_end, EQ_COMPUTE, l, 0))
                e->oom = 1;
            e->ops++;
            return;
        }
        int32_t pending = 0, n = lr->nbuf;
        for (int32_t i = 0; i < n; i++) {
            const prog_op *o = &b[i];
            pending +=
                o->type == PROG_SEND
                    ? !post_send(e, c, l, o->msg, o->peer, o->bytes, o->flags,
                                 o, lr->index + i, now, H)
                    : !post_recv(e, c, l, o->msg, (int32_t)(base + i), now, H);
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

/* advance for a GEN_RING program without a hook: the engine steps the
 * ring's cursor itself (gen_ring_step) and posts the step's two ops in
 * gen_ring_next's order without writing them out, since nothing reads
 * them; the same posts, so the same events, times and order. The
 * channels' ranks were set before the run (ring_channels). */
static HOT void advance_ring(eng_sim *e, eng_cursor *c, const gen_ring *rg,
                             int32_t l, double now, uint8_t F)
{
    gen_ring_state *st = (gen_ring_state *)(void *)c->state + l;
    int32_t prev = l > 0 ? l - 1 : rg->N - 1;
    for (;;) {
        double sb, rb;
        if (!gen_ring_step(rg, st, l, &sb, &rb)) {
            c->lane[l].state = LANE_DONE;
            return;
        }
        int pending;
        if (l == 0) {
            pending = !post_send(e, c, l, l, -1, sb, F, NULL, 0, now, 0);
            pending += !post_recv(e, c, l, prev, 0, now, 0);
        } else {
            pending = !post_recv(e, c, l, prev, 0, now, 0);
            pending += !post_send(e, c, l, l, -1, sb, F, NULL, 0, now, 0);
        }
        e->ops += 2;
        if (pending) {
            c->lane[l].pending = pending;
            c->lane[l].state = LANE_WAIT_BATCH;
            return;
        }
    }
}

/* advance_ring's channels: ring position k sends to k + 1 on channel k. */
static void ring_channels(eng_cursor *c, const gen_ring *rg)
{
    for (int32_t k = 0; k < rg->N; k++) {
        c->chan[k].src = rg->rank[k];
        c->chan[k].dst = rg->rank[k + 1 < rg->N ? k + 1 : 0];
    }
}

/* Lane l's compute op ended: the device's next waiting lane (*r0, -1
 * if none), then l (*r1) are ready. */
static HOT void compute_done(eng_sim *e, eng_cursor *c, int32_t l, int32_t *r0,
                             int32_t *r1, int H)
{
    clane *lr = &c->lane[l];
    const prog_op *op = &c->buf[(int64_t)l * c->B];
    e->busy[l] += op->t_end - op->t_start;
    if (op->mem < 0)
        eng_mem_apply_(e, l, lr->rank, op->t_end, op->mem);
    if (H)
        done(e, l, op, lr->index);
    e->device[lr->rank] = -1;
    wait_list *w = &e->device_wait[lr->rank];
    int32_t next = w->head;
    if (next >= 0) { /* FIFO: the waiting lane gets the device */
        w->head = c->lane[next].next;
        if (w->head < 0)
            w->tail = -1;
        c->lane[next].state = LANE_READY;
    }
    *r0 = next;
    lr->nbuf = 0;
    lr->state = LANE_READY;
    *r1 = l;
}

/* The run from its start: 0, or the stop's PS_ERR (err set); the caller
 * reads c->bad and e->oom (which bad() sets too). */
static HOT int run_loop(eng_sim *e, eng_cursor *c, int fifo, double *lastp,
                        int64_t *eventsp, ps_err *err, int H, int K, uint8_t F)
{
    const gen_ring *rg = c->g->ctx;
    if (K == GEN_RING)
        ring_channels(c, rg);
    /* every lane is ready at 0, advanced in lane order */
    for (int32_t l = 0; l < c->g->nlanes; l++)
        if (K == GEN_RING)
            advance_ring(e, c, rg, l, 0, F);
        else
            advance(e, c, l, 0, H, K);
    const eq_event *ev;
    int64_t events = e->count_base;
    double now = 0, last = 0;
    for (;;) {
        /* FAIR: flows that started or ended at this instant share one
         * solve, before time moves on (net/net.h) */
        if (!fifo && !e->oom && net_settle(e->nw))
            e->oom = 1;
        if (e->oom || (ev = eq_pop_ref(&e->q)) == NULL)
            break;
        if ((++events & 4095) == 0 && limit_stopped())
            return ps_errf(err, "stopped at t=%.9g s after %lld events", now,
                           (long long)events);
        now = ev->t;
        int32_t r0, r1;
        if (K != GEN_RING && ev->type == EQ_COMPUTE) {
            compute_done(e, c, ev->id, &r0, &r1, H);
        } else {
            /* FIFO: every EQ_NET event is the arrival of transfer ev.id
             * (net/net.h) */
            eq_event copy; /* net_event may push over *ev */
            int32_t id = fifo ? ev->id : net_event(e->nw, (copy = *ev, &copy));
            if (id < 0)
                continue; /* stale or internal (FAIR) */
            arrived(e, c, id, now, &r0, &r1, H);
        }
        last = now;
        if (K == GEN_RING) {
            if (r0 >= 0)
                advance_ring(e, c, rg, r0, now, F);
            if (r1 >= 0)
                advance_ring(e, c, rg, r1, now, F);
        } else {
            if (r0 >= 0)
                advance(e, c, r0, now, H, K);
            if (r1 >= 0)
                advance(e, c, r1, now, H, K);
        }
    }
    *lastp = last;
    *eventsp = events;
    return PS_OK;
}

/* run_loop compiled per case: any generator, with and without a hook; a
 * ring without one, lockstep (F 0) or slotted (F its sends' flags, the
 * only two coll/gen_coll.c sets). */
static int loop_any(eng_sim *e, eng_cursor *c, int fifo, double *last,
                    int64_t *events, ps_err *err)
{
    return run_loop(e, c, fifo, last, events, err, 0, GEN_ANY, 0);
}

static int loop_any_hook(eng_sim *e, eng_cursor *c, int fifo, double *last,
                         int64_t *events, ps_err *err)
{
    return run_loop(e, c, fifo, last, events, err, 1, GEN_ANY, 0);
}

static int loop_ring(eng_sim *e, eng_cursor *c, int fifo, double *last,
                     int64_t *events, ps_err *err)
{
    return run_loop(e, c, fifo, last, events, err, 0, GEN_RING, 0);
}

static int loop_ring_slots(eng_sim *e, eng_cursor *c, int fifo, double *last,
                           int64_t *events, ps_err *err)
{
    return run_loop(e, c, fifo, last, events, err, 0, GEN_RING,
                    PROG_EARLY | PROG_NOWAIT);
}

/* What a lane of advance_ring waits on: position 0 on its SEND (which
 * gen_ring_next puts first), the others on their RECV. */
static prog_op ring_blocked(const eng_cursor *c, int32_t l)
{
    const gen_ring *rg = c->g->ctx;
    int32_t N = rg->N;
    return (prog_op){.peer = rg->rank[l == 0 ? 1 % N : l - 1],
                     .mb = -1,
                     .type = (uint8_t)(l == 0 ? PROG_SEND : PROG_RECV),
                     .kind = PROG_COLL};
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
        prog_op op = c->buf[(int64_t)l * c->B];
        if (c->ring_fast) /* its op that blocks, as gen_ring_next has it */
            op = ring_blocked(c, l);
        prog_describe(&op, what, sizeof what);
        len += snprintf(buf + len, sizeof buf - (size_t)len,
                        "%srank %d waits on %s", shown++ ? "; " : "",
                        (int)c->lane[l].rank, what);
    }
    if (shown < blocked)
        snprintf(buf + len, sizeof buf - (size_t)len, "; and %d more ranks",
                 (int)(blocked - shown));
    return ps_errf(err, "%s", buf);
}

/* Checked once a run has drained (sim/gen.h's contract and this file's
 * bookkeeping, O(channels + pool)): every post met its other side and
 * every message record went back to its channel or the pool. 0 when
 * they hold. */
static int check_drained(eng_sim *e, ps_err *err)
{
    eng_cursor *c = e->cur;
    for (uint32_t k = 0; k < c->nch; k++) {
        const chan *ch = &c->chan[k];
        if (ch->head >= 0)
            return ps_errf(err,
                           "generated program: channel %u: a %s never met "
                           "by a %s",
                           k, ch->sends ? "SEND" : "RECV",
                           ch->sends ? "RECV" : "SEND");
        assert(!ch->own);
    }
#ifndef NDEBUG
    int32_t free_n = 0;
    for (int32_t m = c->free_msg; m >= 0; m = c->msg[m].next)
        free_n++;
    assert(free_n == c->msg_used - 2 * (int32_t)c->nch);
#endif
    return PS_OK;
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
    e->ps = NULL;
    e->nw = nw;
    e->p2p = p2p;
    if (eng_cursor_size_(e, g, e->sink.op_done != NULL))
        return ps_errf(err, "out of memory sizing the engine");
    eng_cursor *c = e->cur;
    e->transfers = e->ops = e->count_base;
    e->oom = 0;
    eq_clear(&e->q);
    e->q.next_seq = (uint64_t)e->count_base; /* 0 but in test_widths */
    net_begin(nw, &e->q);
    int fifo = net_sharing_of(nw) == NET_FIFO;
    c->mesh = net_mesh_fifo(nw, &c->slots, &c->bw, &c->lat);
    int hook = e->sink.op_done != NULL, ring = g->kind == GEN_RING;
    int64_t events = 0;
    double last = 0;
    c->ring_fast = ring && !hook;
    uint8_t sflags = ring ? ((const gen_ring *)g->ctx)->sflags : 0;
    assert(sflags == 0 || sflags == (PROG_EARLY | PROG_NOWAIT));
    int rc = (c->ring_fast ? sflags ? loop_ring_slots : loop_ring
              : hook       ? loop_any_hook
                           : loop_any)(e, c, fifo, &last, &events, err);
    if (rc)
        return rc;
    if (c->bad)
        return ps_errf(err, "%s", c->bad_msg);
    if (e->oom)
        return ps_errf(err, "out of memory during the run");
    res->makespan = last;
    res->events = events;
    res->ops = e->ops;
    res->transfers = e->transfers;
    for (int32_t l = 0; l < g->nlanes; l++)
        if (c->lane[l].state != LANE_DONE)
            return deadlock(e, last, err);
    return check_drained(e, err);
}
