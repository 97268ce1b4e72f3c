/* Program sets: growable lanes of ops plus the message table that pairs each
 * SEND with its RECV. Generators append; prog_seal validates once per run so
 * the engine can trust every index it follows. */
/* madvise (Linux) needs the default feature set; it must be asked for
 * before the first system header, hence before our own header here. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE 1
#endif
#include "sim/prog.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "base/limit.h"
#include "base/vec.h"

_Static_assert(sizeof(prog_op) == 48, "prog_op grew: generation and the engine "
                                      "stream millions of them");

void *prog_big_alloc(size_t bytes)
{
#if defined(MADV_HUGEPAGE)
    const size_t huge = (size_t)2 << 20;
    if (bytes >= 2 * huge) {
        size_t size = (bytes + huge - 1) / huge * huge;
        void *p = limit_aligned_alloc(huge, size);
        if (p)
            madvise(p, size, MADV_HUGEPAGE); /* a hint: failure is harmless */
        return p;
    }
#endif
    return limit_malloc(bytes);
}

prog_set *prog_new(int32_t nranks)
{
    prog_set *ps = calloc(1, sizeof *ps);
    if (ps)
        ps->nranks = nranks;
    return ps;
}

void prog_free(prog_set *ps)
{
    if (!ps)
        return;
    for (size_t i = 0; i < ps->lanes_cap; i++)
        if (!ps->lanes[i].in_arena)
            limit_free(ps->lanes[i].ops);
    free(ps->lanes);
    limit_free(ps->msgs);
    limit_free(ps->arena);
    free(ps);
}

void prog_reset(prog_set *ps, int32_t nranks)
{
    for (int32_t i = 0; i < ps->nlanes; i++) {
        prog_lane *l = &ps->lanes[i];
        l->n = 0;
        if (l->in_arena == PROG_ALIAS) { /* a view: never written through */
            l->ops = NULL;
            l->cap = 0;
            l->in_arena = 0;
        }
    }
    ps->nlanes = 0;
    ps->nmsgs = 0;
    ps->nsignals = 0;
    ps->nranks = nranks;
}

int32_t prog_add_lane(prog_set *ps, int32_t rank)
{
    /* new lanes zero: no ops, no capacity, not in the arena */
    if (ps->nlanes == INT32_MAX ||
        VEC_RESERVE(ps->lanes, ps->lanes_cap, (size_t)ps->nlanes + 1))
        return -1;
    prog_lane *lane = &ps->lanes[ps->nlanes];
    lane->rank = rank;
    lane->n = 0; /* ops and cap are kept from an earlier run */
    return ps->nlanes++;
}

/* For the memory stop's message (limit_note_need): what ops ops and
 * msgs messages take as arrays (an op, a message's table entry and its
 * engine state byte), "about" that (exact) or "more than" that. */
static void note_need(const char *who, int64_t ops, int64_t msgs, int exact)
{
    if (limit_stopped() != LIMIT_MEMORY)
        return;
    size_t bytes =
        (size_t)ops * sizeof(prog_op) + (size_t)msgs * (sizeof(prog_msg) + 1);
    char b[32], m[32], line[320];
    /* what to change (issue 27 item 14): the budget (more than it has,
     * when what is counted is a lower bound below it), or the ops */
    limit_format_bytes(bytes, b, sizeof b);
    limit_format_bytes(bytes > limit_memory() ? bytes : limit_memory(), m,
                       sizeof m);
    snprintf(line, sizeof line,
             "%s %s%s as arrays (%.1f M ops): give --max-memory more than "
             "%s, or simulate fewer ops (fewer microbatches, ranks or "
             "gradient-sync buckets)",
             who, exact ? "about " : "more than ", b, (double)ops / 1e6, m);
    limit_note_need(line);
}

void prog_note_need(const prog_set *ps, int64_t more)
{
    int64_t n = more;
    for (int32_t i = 0; i < ps->nlanes; i++)
        n += ps->lanes[i].n;
    note_need("the run's programs need", n, ps->nmsgs, 0);
}

int prog_reserve(prog_set *ps, const int64_t *count)
{
    int64_t total = 0;
    for (int32_t l = 0; l < ps->nlanes; l++) {
        if (count[l] < 0 || count[l] > INT32_MAX)
            return -1;
        total += count[l];
    }
    /* an arena even for no ops: lanes point into it, and NULL + 0 is
     * undefined (a one-rank collective of 0 bytes; found by fuzz_scenario) */
    if (total > ps->arena_cap || !ps->arena) {
        prog_op *a = prog_big_alloc(((size_t)total + 1) * sizeof *a);
        if (!a) {
            /* a collective's: one message per SEND and RECV pair */
            note_need("the run's programs need", total, total / 2, 1);
            return -1;
        }
        for (size_t l = 0; l < ps->lanes_cap; l++) {
            prog_lane *lane = &ps->lanes[l];
            if (lane->in_arena) { /* its slice goes with the old block */
                lane->ops = NULL;
                lane->cap = 0;
                lane->in_arena = 0;
            }
        }
        limit_free(ps->arena);
        ps->arena = a;
        ps->arena_cap = total;
    }
    /* lanes beyond nlanes keep their capacity for later runs, but a slice
     * of theirs may overlap the new ones */
    for (size_t l = (size_t)ps->nlanes; l < ps->lanes_cap; l++) {
        prog_lane *lane = &ps->lanes[l];
        if (lane->in_arena) {
            lane->ops = NULL;
            lane->cap = 0;
            lane->in_arena = 0;
        }
    }
    int64_t off = 0;
    for (int32_t l = 0; l < ps->nlanes; l++) {
        prog_lane *lane = &ps->lanes[l];
        if (!lane->in_arena)
            limit_free(lane->ops);
        lane->ops = ps->arena + off;
        lane->cap = (int32_t)count[l];
        lane->in_arena = 1;
        lane->n = 0;
        off += count[l];
    }
    return 0;
}

/* Moves lane l to a block of its own with room for cap ops. */
static int move_lane(const prog_set *ps, prog_lane *l, int64_t cap)
{
    if (cap > INT32_MAX)
        return -1;
    prog_op *ops;
    if (l->in_arena) { /* leave the slice: the next lane's ops follow */
        ops = limit_malloc((size_t)cap * sizeof *ops);
        if (ops && l->n)
            memcpy(ops, l->ops, (size_t)l->n * sizeof *ops);
    } else {
        ops = limit_realloc(l->ops, (size_t)cap * sizeof *ops);
    }
    if (!ops) {
        /* the set so far with this lane grown: a lower bound */
        int64_t n = cap - l->n;
        for (int32_t i = 0; i < ps->nlanes; i++)
            n += ps->lanes[i].n;
        note_need("the run's programs need", n, ps->nmsgs, 0);
        return -1;
    }
    l->ops = ops;
    l->cap = (int32_t)cap;
    l->in_arena = 0;
    return 0;
}

int prog_grow(prog_set *ps, int32_t lane, int64_t extra)
{
    prog_lane *l = &ps->lanes[lane];
    int64_t need = (int64_t)l->n + extra;
    return need <= l->cap ? 0 : move_lane(ps, l, need);
}

int prog_push(prog_set *ps, int32_t lane, const prog_op *op)
{
    prog_lane *l = &ps->lanes[lane];
    if (l->n == l->cap && move_lane(ps, l, l->cap ? 2 * (int64_t)l->cap : 64))
        return -1;
    /* generating a huge run takes seconds: a stop (base/limit.h) ends it too */
    if ((l->n & 4095) == 4095 && limit_stopped())
        return -1;
    l->ops[l->n++] = *op;
    return 0;
}

void prog_drop_front(prog_set *ps, int32_t lane, int32_t k)
{
    prog_lane *l = &ps->lanes[lane];
    if (k <= 0)
        return;
    if (k < l->n)
        memmove(l->ops, l->ops + k, (size_t)(l->n - k) * sizeof *l->ops);
    l->n -= k;
    if (l->n == 0 && !l->in_arena) {
        limit_free(l->ops);
        l->ops = NULL;
        l->cap = 0;
    }
}

void prog_alias_lane(prog_set *ps, int32_t lane, prog_op *ops, int32_t n)
{
    prog_lane *l = &ps->lanes[lane];
    if (!l->in_arena)
        limit_free(l->ops);
    l->ops = ops;
    l->n = n;
    l->cap = n;
    l->in_arena = PROG_ALIAS; /* left alone by free, moved by grow */
}

prog_op prog_compute(enum prog_kind kind, int32_t stage, int16_t chunk,
                     int32_t mb, double seconds, double mem)
{
    prog_op op = {0};
    op.type = PROG_COMPUTE;
    op.kind = (uint8_t)kind;
    op.stage = stage;
    op.chunk = chunk;
    op.mb = mb;
    op.seconds = seconds;
    op.mem = mem; /* shares storage with msg and peer */
    return op;
}

prog_op prog_delay(enum prog_kind kind, int32_t tag, double seconds)
{
    prog_op op = {0};
    op.type = PROG_DELAY;
    op.kind = (uint8_t)kind;
    op.tag = tag;
    op.mb = -1;
    op.seconds = seconds;
    return op;
}

prog_op prog_signal(enum prog_type type, int32_t id)
{
    prog_op op = {0};
    op.type = (uint8_t)type;
    op.msg = id;
    op.peer = -1;
    op.stage = -1;
    op.mb = -1;
    op.tag = -1;
    return op;
}

static prog_op p2p(enum prog_type type, int32_t peer, int32_t msg, double bytes,
                   enum prog_kind kind, int32_t mb, unsigned flags)
{
    prog_op op = {0};
    op.type = (uint8_t)type;
    op.kind = (uint8_t)kind;
    op.peer = peer;
    op.msg = msg;
    op.bytes = bytes;
    op.mb = mb;
    op.tag = -1; /* shares storage with stage */
    op.flags = (uint8_t)flags;
    return op;
}

prog_op prog_send(int32_t peer, int32_t msg, double bytes, enum prog_kind kind,
                  int32_t mb, unsigned flags)
{
    return p2p(PROG_SEND, peer, msg, bytes, kind, mb, flags);
}

prog_op prog_recv(int32_t peer, int32_t msg, double bytes, enum prog_kind kind,
                  int32_t mb, unsigned flags)
{
    return p2p(PROG_RECV, peer, msg, bytes, kind, mb, flags);
}

int64_t prog_count(const prog_set *ps)
{
    int64_t n = 0;
    for (int32_t i = 0; i < ps->nlanes; i++)
        n += ps->lanes[i].n;
    return n;
}

char prog_kind_letter(enum prog_kind kind)
{
    static const char letters[] = "FBWROCFB"; /* FB halves: F, B */
    return (unsigned)kind < sizeof letters - 1 ? letters[kind] : '?';
}

void prog_describe(const prog_op *op, char *buf, int size)
{
    char what[48];
    if (op->chunk > 0)
        snprintf(what, sizeof what, "%c%d.c%d", prog_kind_letter(op->kind),
                 (int)op->mb, (int)op->chunk);
    else if (op->mb >= 0)
        snprintf(what, sizeof what, "%c%d", prog_kind_letter(op->kind),
                 (int)op->mb);
    else
        snprintf(what, sizeof what, "%s",
                 op->kind == PROG_COLL  ? "collective"
                 : op->kind == PROG_OPT ? "optimizer step"
                                        : "op");
    switch (op->type) {
    case PROG_COMPUTE: snprintf(buf, (size_t)size, "%s", what); break;
    case PROG_SEND:
        snprintf(buf, (size_t)size, "send %s to rank %d", what, (int)op->peer);
        break;
    case PROG_RECV:
        snprintf(buf, (size_t)size, "recv %s from rank %d", what,
                 (int)op->peer);
        break;
    case PROG_SIGNAL:
        snprintf(buf, (size_t)size, "signal %d", (int)op->msg);
        break;
    case PROG_WAIT:
        snprintf(buf, (size_t)size, "wait for signal %d", (int)op->msg);
        break;
    case PROG_DELAY:
        snprintf(buf, (size_t)size, "delay of %g s", op->seconds);
        break;
    default:
        snprintf(buf, (size_t)size, "op of unknown type %d", (int)op->type);
    }
}

/* "rank 3: send F2 to rank 4 <what>": ops are described only on error,
 * since sealing runs once per simulated step of a sweep. */
static int op_error(ps_err *err, const prog_lane *lane, const prog_op *op,
                    const char *what)
{
    char desc[96];
    prog_describe(op, desc, sizeof desc);
    return ps_errf(err, "rank %d: %s %s", (int)lane->rank, desc, what);
}

/* 1 when the two sides of message id agree on ranks and bytes; else fills
 * the error. */
static int pair_ok(const prog_set *ps, int32_t id, ps_err *err)
{
    const prog_msg *m = &ps->msgs[id];
    const prog_op *s = &ps->lanes[m->send_lane].ops[m->send_op];
    const prog_op *r = &ps->lanes[m->recv_lane].ops[m->recv_op];
    int32_t srank = ps->lanes[m->send_lane].rank;
    int32_t rrank = ps->lanes[m->recv_lane].rank;
    const int32_t *im = ps->image;
    if ((im ? im[s->peer] != im[rrank] || im[r->peer] != im[srank]
            : s->peer != rrank || r->peer != srank)) {
        if (err)
            ps_errf(err,
                    "message %d: rank %d sends to rank %d but rank %d "
                    "receives it from rank %d",
                    (int)id, (int)srank, (int)s->peer, (int)rrank,
                    (int)r->peer);
        return 0;
    }
    if (s->bytes != r->bytes) {
        if (err)
            ps_errf(err,
                    "message %d: rank %d sends %.0f bytes but rank %d "
                    "expects %.0f",
                    (int)id, (int)srank, s->bytes, (int)rrank, r->bytes);
        return 0;
    }
    return 1;
}

/* What one pass over the ops learns (prog_seal). */
typedef struct seal {
    char *signalled;   /* per signal id: raised by some SIGNAL */
    int64_t open;      /* messages with one side seen */
    int64_t waits;     /* WAIT ops */
    int32_t first_bad; /* lowest id whose sides disagree; nmsgs: none */
} seal;

/* The message table sized for every id, all sides unseen; its memory is
 * kept between runs (one spare entry, which the engine may prefetch). */
static int seal_table(prog_set *ps, ps_err *err)
{
    if (ps->nmsgs >= ps->msgs_cap) {
        limit_free(ps->msgs);
        ps->msgs_cap = 0;
        ps->msgs = prog_big_alloc(((size_t)ps->nmsgs + 1) * sizeof *ps->msgs);
        if (!ps->msgs)
            return ps_errf(err, "out of memory for %d messages",
                           (int)ps->nmsgs);
        ps->msgs_cap = ps->nmsgs + 1;
    }
    memset(ps->msgs, 0xff, (size_t)ps->nmsgs * sizeof *ps->msgs);
    return PS_OK;
}

/* A SEND or RECV, op i of lane l: what is wrong with it (NULL: nothing),
 * else its side entered in the table; the pair is checked when its second
 * side is seen, while the first is likely still in cache. what is room
 * for a message naming the id. */
static const char *seal_p2p(prog_set *ps, int32_t l, int32_t i, seal *st,
                            char *what, size_t size)
{
    const prog_lane *lane = &ps->lanes[l];
    const prog_op *op = &lane->ops[i];
    if ((op->flags & PROG_BATCH) &&
        (i + 1 == lane->n || (lane->ops[i + 1].type != PROG_SEND &&
                              lane->ops[i + 1].type != PROG_RECV)))
        return "is batched with nothing";
    if (op->msg < 0 || op->msg >= ps->nmsgs)
        return "has a message id out of range";
    if (op->peer < 0 || op->peer >= ps->nranks || op->peer == lane->rank)
        return "has an invalid peer";
    if (!(op->bytes >= 0))
        return "has negative bytes";
    prog_msg *m = &ps->msgs[op->msg];
    int send = op->type == PROG_SEND;
    int32_t *slot_lane = send ? &m->send_lane : &m->recv_lane;
    int32_t *slot_op = send ? &m->send_op : &m->recv_op;
    if (*slot_lane >= 0) {
        snprintf(what, size, "reuses message id %d", (int)op->msg);
        return what;
    }
    *slot_lane = l;
    *slot_op = i;
    if ((send ? m->recv_lane : m->send_lane) < 0) {
        st->open++;
    } else {
        st->open--;
        if (op->msg < st->first_bad && !pair_ok(ps, op->msg, NULL))
            st->first_bad = op->msg;
    }
    return NULL;
}

/* Lane l's ops: its rank, every signal id, duration and message side;
 * the first op that is wrong fails the lane. */
static int seal_lane(prog_set *ps, int32_t l, seal *st, ps_err *err)
{
    const prog_lane *lane = &ps->lanes[l];
    if (lane->rank < 0 || lane->rank >= ps->nranks)
        return ps_errf(err, "lane %d: rank %d outside 0..%d", (int)l,
                       (int)lane->rank, (int)ps->nranks - 1);
    for (int32_t i = 0; i < lane->n; i++) {
        const prog_op *op = &lane->ops[i];
        if (op->type == PROG_SIGNAL || op->type == PROG_WAIT) {
            if (op->msg < 0 || op->msg >= ps->nsignals)
                return ps_errf(err, "rank %d: signal id %d out of range",
                               (int)lane->rank, (int)op->msg);
            if (op->type == PROG_SIGNAL)
                st->signalled[op->msg] = 1;
            else
                st->waits++;
            continue;
        }
        if (op->type == PROG_COMPUTE || op->type == PROG_DELAY) {
            if (!(op->seconds >= 0) || op->seconds > 1e300)
                return op_error(err, lane, op, "has an invalid duration");
            continue;
        }
        if (op->type != PROG_SEND && op->type != PROG_RECV)
            continue;
        char what[64];
        const char *bad = seal_p2p(ps, l, i, st, what, sizeof what);
        if (bad)
            return op_error(err, lane, op, bad);
    }
    return PS_OK;
}

/* The lowest id that is unmatched or disagrees; usually none, and then
 * the table is not read again. */
static int seal_pairs(const prog_set *ps, const seal *st, ps_err *err)
{
    for (int32_t id = 0; (st->open > 0 || st->first_bad < ps->nmsgs) &&
                         id <= st->first_bad && id < ps->nmsgs;
         id++) {
        const prog_msg *m = &ps->msgs[id];
        if (id == st->first_bad) {
            pair_ok(ps, id, err);
            return PS_ERR;
        }
        if (m->send_lane < 0 || m->recv_lane < 0) {
            int32_t l = m->send_lane >= 0 ? m->send_lane : m->recv_lane;
            int32_t i = m->send_lane >= 0 ? m->send_op : m->recv_op;
            if (l < 0)
                continue; /* an id handed out but never used */
            char desc[96];
            prog_describe(&ps->lanes[l].ops[i], desc, sizeof desc);
            return ps_errf(err, "rank %d: %s never matched",
                           (int)ps->lanes[l].rank, desc);
        }
    }
    return PS_OK;
}

/* The first WAIT, in lane order, for a signal nothing raises. */
static int seal_waits(const prog_set *ps, const seal *st, ps_err *err)
{
    for (int32_t l = 0; l < ps->nlanes && st->waits > 0; l++) {
        const prog_lane *lane = &ps->lanes[l];
        for (int32_t i = 0; i < lane->n; i++)
            if (lane->ops[i].type == PROG_WAIT &&
                !st->signalled[lane->ops[i].msg])
                return ps_errf(err,
                               "rank %d: waits for signal %d that nothing "
                               "raises",
                               (int)lane->rank, (int)lane->ops[i].msg);
    }
    return PS_OK;
}

/* One pass over the ops fills the message table and checks each pair when
 * its second side is seen (the first is usually still in cache), since a
 * collective seals millions of ops. Errors are reported as a pass per kind
 * would: op errors in lane order first, then the lowest message id that is
 * unmatched or disagrees, then waits. */
int prog_seal(prog_set *ps, ps_err *err)
{
    assert((size_t)ps->nlanes <= ps->lanes_cap && ps->nmsgs >= 0 &&
           ps->nsignals >= 0);
    if (seal_table(ps, err))
        return PS_ERR;
    seal st = {.first_bad = ps->nmsgs};
    st.signalled = calloc((size_t)ps->nsignals + 1, 1);
    if (!st.signalled)
        return ps_errf(err, "out of memory");
    int rc = PS_OK;
    for (int32_t l = 0; l < ps->nlanes && rc == PS_OK; l++)
        rc = seal_lane(ps, l, &st, err);
    if (rc == PS_OK)
        rc = seal_pairs(ps, &st, err);
    if (rc == PS_OK)
        rc = seal_waits(ps, &st, err);
    free(st.signalled);
    /* sealed: every message used has both sides, and they agree (the
     * engine follows these indices unchecked) */
    assert(rc != PS_OK || (st.open == 0 && st.first_bad == ps->nmsgs));
    return rc;
}
