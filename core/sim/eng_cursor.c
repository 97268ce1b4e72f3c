/* Engine, cursor path: runs a generated program (sim/gen.h) with the array
 * path's semantics and event order (sim/eng.c), so both give the same times
 * bit for bit. A lane holds its current op or batch in a small buffer and
 * asks the generator for the next one when it moves on; messages match by
 * channel sequence numbers through per-channel FIFO queues of posts not yet
 * met; a message in flight is one record from a pool (free list), released
 * when both sides are complete. Memory: O(lanes x max_batch + channels +
 * messages in flight), never O(ops). No faults and no recv_timeout here:
 * callers run those as arrays.
 * One concept in one file on purpose (~890 lines): the per-event loop is
 * one static inline body compiled once per case (any generator with and
 * without a hook, the ring lockstep and slotted), and it reads the private
 * lane, channel and message records directly; the batch checks, the
 * deadlock and drain diagnostics read the same records. Splitting them
 * would put those records in a header and the loop's helpers behind calls
 * on the hot path. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"
#include "sim/eng.h"
#include "sim/eng_impl.h"
#include "sim/gen_ring.h"

#define CHAN_NO_PAIR INT32_MIN

enum cmsg_bits {
    CM_SEND_POSTED = 1,
    CM_RECV_POSTED = 2,
    CM_STARTED = 4,
    CM_ARRIVED = 8,
    CM_SEND_WAITS = 16 /* the SEND's lane waits for the arrival: rendezvous
                          and not NOWAIT, the array path's rule */
};

/* One message from its first post to its completion: what the transfer
 * and the arrival need of the SEND (an eager or NOWAIT send completes for
 * its lane, which moves on, before its bytes arrive) and where its RECV
 * sits. 24 bytes. With a completion hook the whole SEND, its index and
 * the RECV's buffer slot are kept too (eng_cursor.sop, sidx, rslot), out
 * of this record. Ids 0 .. 2 nch - 1
 * are the channels' own records (channel k's messages in flight take
 * records 2k and 2k + 1 first: a ring whose sends run one step ahead
 * never touches the free list), the pool follows. */
typedef struct cmsg {
    double bytes;
    int32_t send_lane;
    int32_t recv_lane;
    int32_t next; /* channel queue or free list */
    uint8_t st;   /* enum cmsg_bits */
} cmsg;

/* Posts of one channel not yet met by the other side, oldest first; all
 * of one side (a post of the other side meets the oldest). A channel
 * joins one rank to one other: its first SEND names them (src, dst), and
 * its link slot is looked up at its first transfer. */
typedef struct chan {
    int32_t head, tail;
    int32_t pair;     /* net_pair of (src, dst), CHAN_NO_PAIR before the
                         first transfer */
    int32_t src, dst; /* -1 before the first SEND */
    int32_t conn;     /* net_start_conn's state of its slotted sends */
    uint8_t sends;    /* 1: the queue holds SENDs, 0: RECVs */
    uint8_t own;      /* bit b: its own record 2k + b is in use */
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

/* Integer widths (issue 12: 1 << 20 ranks, 2^40 ops; test_widths has the
 * public counters): what grows with ops is 64-bit, what grows with
 * ranks, channels or messages in flight is 32-bit. */
_Static_assert(sizeof(((clane *)0)->index) == 8,
               "clane.index: a lane's op count, 2^40 on one lane");
_Static_assert(sizeof(((eng_sim *)0)->ops) == 8 &&
                   sizeof(((eng_sim *)0)->transfers) == 8,
               "eng_sim.ops, transfers: the run's totals");
_Static_assert(sizeof(((cmsg *)0)->send_lane) == 4 &&
                   sizeof(((chan *)0)->src) == 4,
               "lanes and ranks: 32-bit, 1 << 20 and more");

struct eng_cursor {
    clane *lane;
    int32_t lane_cap;
    prog_op *buf; /* max_batch per lane */
    int64_t buf_cap;
    unsigned char *state;
    size_t state_cap;
    chan *chan;
    int32_t chan_cap;
    cmsg *msg;      /* msg_cap records: the channels' own, then the pool */
    prog_op *sop;   /* the SENDs, kept only with a hook */
    int64_t *sidx;  /* and their indices in their lanes */
    int32_t *rslot; /* and their RECVs' slots in their lanes' buffers */
    int32_t msg_cap, msg_used, free_msg;
    int32_t sop_cap; /* entries of sop and sidx */
    /* the run */
    const gen_prog *g;
    int32_t B;    /* max_batch */
    uint32_t nch; /* channels, unsigned for one comparison */
    size_t state_bytes;
    int (*next)(const gen_prog *g, int32_t lane, void *state, prog_op *ops);
    int trusted;    /* gen_prog.trusted: batches are not checked */
    int eager;      /* p2p == ENG_EAGER */
    uint8_t waits;  /* CM_SEND_WAITS under rendezvous, else 0 */
    uint8_t starts; /* CM_STARTED under rendezvous, else 0 */
    /* a FIFO mesh: transfers start inline (net_mesh_fifo) */
    int mesh;
    net_lstat *slots;
    double bw, lat;
    int ring_fast; /* advance_ring runs the lanes: their buffers unused */
    int bad;       /* the generator broke its contract: message in bad_msg */
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
    limit_free(c->sidx);
    limit_free(c->rslot);
    free(c);
    e->cur = NULL;
}

/* What the completion hook needs of a message beyond its record: cap
 * entries; -1 when out of memory (the old arrays stay). */
static int hook_grow(eng_cursor *c, int32_t cap)
{
    prog_op *o = limit_realloc(c->sop, (size_t)cap * sizeof *o);
    if (!o)
        return -1;
    c->sop = o;
    int64_t *x = limit_realloc(c->sidx, (size_t)cap * sizeof *x);
    if (!x)
        return -1;
    c->sidx = x;
    int32_t *y = limit_realloc(c->rslot, (size_t)cap * sizeof *y);
    if (!y)
        return -1;
    c->rslot = y;
    c->sop_cap = cap;
    return 0;
}

/* For the memory stop's message (limit_note_need): what a generated run's
 * engine state takes (lanes, their buffers and cursor state, channels and
 * the link state of one rank pair each, which is exact for a ring and
 * an upper bound where channels share a pair, or of every link of a
 * network that is not a mesh (net_run_bytes), the first message pool,
 * the per-lane and per-rank statistics), before any growth of the
 * message pool, which grows with the messages in flight. Called where the run's
 * setup or a channel's first transfer ran out of memory. */
static void note_cursor_need(const eng_sim *e, const gen_prog *g, int hook)
{
    if (limit_stopped() != LIMIT_MEMORY)
        return;
    double nl = g->nlanes, nr = g->nranks, nch = g->nchannels;
    double msgs = 2 * nch + 1024;
    double bytes =
        nl * (sizeof(clane) + (double)g->max_batch * sizeof(prog_op) +
              g->state_bytes + sizeof *e->ready + sizeof *e->busy) +
        nch * (sizeof(chan) + (double)net_pair_bytes(e->nw)) +
        (double)net_run_bytes(e->nw) + msgs * sizeof(cmsg) +
        (hook ? msgs * (sizeof(prog_op) + sizeof(int64_t) + sizeof(int32_t))
              : 0) +
        nr * (sizeof *e->device + sizeof *e->device_wait + sizeof *e->mem +
              sizeof *e->mem_lane);
    char b[64], line[200];
    snprintf(line, sizeof line,
             "the run's generated lanes and their links need about %s "
             "(%d lanes, %d channels; it grows with ranks, not ops)",
             limit_format_bytes((size_t)bytes, b, sizeof b), (int)g->nlanes,
             (int)g->nchannels);
    limit_note_need(line);
}

static int alloc_cursor(eng_sim *e, const gen_prog *g, int hook)
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
    if (nb >= INT32_MAX) /* eng_cursor.rslot */
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
    /* the channels' own records and a first pool (contents need not
     * survive) */
    if (g->nchannels > INT32_MAX / 4 - 1024)
        return -1;
    if (c->msg_cap < 2 * g->nchannels + 1024) {
        int32_t cap = 2 * g->nchannels + 1024;
        limit_free(c->msg);
        c->msg_cap = 0;
        if (!(c->msg = limit_malloc((size_t)cap * sizeof *c->msg)))
            return -1;
        c->msg_cap = cap;
    }
    if (hook && c->sop_cap < c->msg_cap && hook_grow(c, c->msg_cap))
        return -1;
    memset(c->state, 0, sb);
    /* sim/gen.h: a generator may update its previous batch in place, so the
     * buffer starts defined */
    memset(c->buf, 0, (size_t)nb * sizeof *c->buf);
    for (int32_t l = 0; l < g->nlanes; l++)
        c->lane[l] =
            (clane){e->count_base, g->rank(g, l), 0, -1, 0, 0, LANE_READY};
    for (int32_t k = 0; k < g->nchannels; k++)
        c->chan[k] = (chan){-1, -1, CHAN_NO_PAIR, -1, -1, 0, 0, 0};
    c->msg_used = 2 * g->nchannels;
    c->free_msg = -1;
    c->g = g;
    c->B = g->max_batch;
    c->nch = (uint32_t)g->nchannels;
    c->state_bytes = g->state_bytes;
    c->next = g->next;
    c->trusted = g->trusted;
    c->eager = e->p2p == ENG_EAGER;
    c->waits = c->eager ? 0 : CM_SEND_WAITS;
    c->starts = c->eager ? 0 : CM_STARTED;
    c->bad = 0;
    return eng_begin_stats_(e, g->nlanes, g->nranks);
}

/* alloc_cursor, and on a failure the memory stop's note of what the run
 * would need */
static int size_cursor(eng_sim *e, const gen_prog *g, int hook)
{
    if (alloc_cursor(e, g, hook) == 0)
        return 0;
    note_cursor_need(e, g, hook);
    return -1;
}

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
#define HOT static inline __attribute__((always_inline))
#define COLD static __attribute__((noinline, cold))

/* The message pool is full: grow it geometrically (it reaches the most
 * messages in flight once). */
COLD int32_t msg_grow(eng_sim *e, int H)
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
    if (!p || (H && hook_grow(c, cap))) {
        e->oom = 1;
        return -1;
    }
    c->msg_cap = cap;
    return c->msg_used++;
}

/* A record for a message on channel k: one of its own if free, else the
 * pool's. */
HOT int32_t msg_alloc(eng_sim *e, eng_cursor *c, chan *ch, int32_t k, int H)
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

HOT void msg_release(eng_cursor *c, int32_t m)
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
HOT int32_t enqueue(eng_sim *e, eng_cursor *c, chan *ch, int32_t k,
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
HOT void dequeue(chan *ch, const cmsg *x)
{
    ch->head = x->next;
    if (ch->head < 0)
        ch->tail = -1;
}

HOT void done(eng_sim *e, int32_t l, const prog_op *op, int64_t idx)
{
    eng_done d = {op, idx, l, e->cur->lane[l].rank};
    e->sink.op_done(e->sink.ctx, &d);
}

/* A RECV's index in its lane's program, from its slot in the buffer. */
HOT int64_t recv_index(const eng_cursor *c, int32_t l, int32_t slot)
{
    return c->lane[l].index + (slot - (int64_t)l * c->B);
}

/* The transfer of message m through net/net.h: for a channel whose pair is
 * not cached (looked up once per channel) or not on a FIFO mesh. A
 * slotted send leaves behind the channel's one before it, as in sim/eng.c's
 * start_transfer (net_start_conn). */
COLD void start_slow(eng_sim *e, eng_cursor *c, chan *ch, int32_t m,
                     double bytes, double now, double *t_begin, int slotted)
{
    if (ch->pair == CHAN_NO_PAIR) {
        assert(ch->src >= 0); /* its first SEND named the ranks */
        ch->pair = net_pair(e->nw, ch->src, ch->dst);
        /* net_pair may have moved the slots */
        c->mesh = net_mesh_fifo(e->nw, &c->slots, &c->bw, &c->lat);
    }
    if (ch->pair == -1) {
        note_cursor_need(e, c->g, c->sop_cap > 0);
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
HOT void start_transfer(eng_sim *e, eng_cursor *c, chan *ch, int32_t m,
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
HOT int post_send(eng_sim *e, eng_cursor *c, int32_t l, int32_t k, int32_t peer,
                  double bytes, uint8_t flags, const prog_op *op, int64_t idx,
                  double now, int H)
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
HOT int post_recv(eng_sim *e, eng_cursor *c, int32_t l, int32_t k, int32_t slot,
                  double now, int H)
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
HOT int32_t complete_one(eng_cursor *c, int32_t l)
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
HOT void arrived(eng_sim *e, eng_cursor *c, int32_t m, double now, int32_t *r0,
                 int32_t *r1, int H)
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

COLD void bad(eng_sim *e, int32_t l, const char *why)
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
HOT int fetch(eng_sim *e, eng_cursor *c, int32_t l, clane *lr, prog_op *b,
              int K)
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

HOT void advance(eng_sim *e, eng_cursor *c, int32_t l, double now, int H, int K)
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
HOT void advance_ring(eng_sim *e, eng_cursor *c, const gen_ring *rg, int32_t l,
                      double now, uint8_t F)
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
HOT void compute_done(eng_sim *e, eng_cursor *c, int32_t l, int32_t *r0,
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
HOT int run_loop(eng_sim *e, eng_cursor *c, int fifo, double *lastp,
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
    if (size_cursor(e, g, e->sink.op_done != NULL))
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
