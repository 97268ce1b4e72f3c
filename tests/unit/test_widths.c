/* Integer widths of the engine's counters (issue 12: at least 1 << 20
 * ranks and 2^40 ops). Each counter that grows with ops is 64-bit
 * (asserted here for the public ones, next to their definitions in
 * sim/eng_cursor.c for the cursor's own); the ones that grow with ranks hold
 * a ring of 1 << 20 positions, driven here to its last steps without
 * running the rest: step tags, blocks and bytes there equal the closed
 * forms, and the ring's op and transfer totals (about 2^42) fit. The
 * engine's own counters (ops, transfers, events, every lane's op index,
 * the queue's sequence numbers) are driven past 2^40 by short runs that
 * start at a high base (eng_set_count_base), and simulated times near
 * 2^41 s equal the closed form. */
#include <stdint.h>
#include <string.h>

#include "base/eq.h"
#include "coll/coll.h"
#include "harness.h"
#include "net/net.h"
#include "sched/gen_pipe.h"
#include "sched/sched.h"
#include "sim/eng.h"
#include "sim/gen_ring.h"
#include "sim/prog.h"

#define MEMBER_BITS(type, m) (8 * sizeof(((type *)0)->m))

/* grow with ops: 64-bit */
_Static_assert(MEMBER_BITS(eng_result, ops) == 64, "eng_result.ops");
_Static_assert(MEMBER_BITS(eng_result, transfers) == 64,
               "eng_result.transfers");
_Static_assert(MEMBER_BITS(eng_result, events) == 64, "eng_result.events");
_Static_assert(MEMBER_BITS(eng_done, index) == 64,
               "eng_done.index: an op's position in its lane");
_Static_assert(MEMBER_BITS(eq, next_seq) == 64 &&
                   MEMBER_BITS(eq_event, seq) == 64,
               "eq sequence numbers: one per event pushed");
_Static_assert(MEMBER_BITS(coll_result, transfers) == 64 &&
                   MEMBER_BITS(coll_result, steps) == 64,
               "coll_result.transfers, steps");
/* grow with ranks: 32-bit holds 1 << 20 ranks, a ring's 2 (N - 1) steps
 * and its N channels */
_Static_assert(MEMBER_BITS(prog_op, peer) == 32 &&
                   MEMBER_BITS(prog_op, msg) == 32 &&
                   MEMBER_BITS(prog_op, tag) == 32,
               "prog_op.peer, msg (channel), tag (ring step)");
_Static_assert(MEMBER_BITS(gen_ring_state, s) == 32 &&
                   MEMBER_BITS(gen_ring_state, bs) == 32,
               "gen_ring_state: step and block of a position");

/* The engine's counters driven past 2^40 (eng_set_count_base): a run
 * that starts as if base ops, transfers, events and queue pushes had
 * passed, every lane's op index included, gives the times and op stream
 * of a run from 0, its counts offset by exactly base. A counter kept in
 * 32 bits would wrap there (base mod 2^32 is 2^32 - 40: the queue's ties
 * would break the other way, indices would go negative). */
typedef struct seen {
    prog_op op[1024];
    int64_t index[1024];
    int32_t lane[1024];
    int n;
} seen;

static void on_done(void *ctx, const eng_done *d)
{
    seen *s = ctx;
    if (s->n < 1024) {
        s->op[s->n] = *d->op;
        s->index[s->n] = d->index;
        s->lane[s->n] = d->lane;
    }
    s->n++;
}

/* 1F1B, p = 4, m = 16, of stages st on a mesh of latency lat, from base,
 * with sink (or none). */
static void run_1f1b(const sched_stage *st, double lat, const eng_sink *sink,
                     int64_t base, eng_result *res)
{
    sched_spec sp = {.kind = SCHED_1F1B,
                     .p = 4,
                     .v = 1,
                     .m = 16,
                     .stages = st,
                     .placement = SCHED_LOOP};
    net *nw = net_new(4);
    ps_err err;
    CHECK_INT(net_set_mesh(nw, 25e9, lat, &err), 0);
    eng_sim *e = eng_new();
    if (sink)
        eng_set_sink(e, sink);
    eng_set_count_base(e, base);
    CHECK_INT(gen_pipe_run(&sp, nw, ENG_RENDEZVOUS, e, res, &err), 0);
    eng_free(e);
    net_free(nw);
}

/* 1F1B, p = 4, m = 16, uneven stages, with a hook, from base. */
static void run_pipe(int64_t base, seen *s, eng_result *res)
{
    sched_stage st[4];
    for (int32_t i = 0; i < 4; i++)
        st[i] =
            (sched_stage){1e-3 * (1 + i % 3), 2.1e-3, 0, 1e9, 0, 4e6, 3e-4, 0};
    eng_sink sink = {on_done, NULL, s};
    memset(s, 0, sizeof *s);
    run_1f1b(st, 5e-6, &sink, base, res);
}

static int32_t ring_rank(const gen_prog *g, int32_t lane)
{
    return ((const gen_ring *)g->ctx)->rank[lane];
}

/* A ring allreduce of 8 positions on the engine's own ring loop (no
 * hook), from base. */
static void run_ring(int64_t base, eng_result *res)
{
    int32_t rank[8];
    for (int32_t i = 0; i < 8; i++)
        rank[i] = 7 - i;
    gen_ring c = {.rank = rank,
                  .N = 8,
                  .steps = 2 * 7,
                  .rs = 1,
                  .rem = 3,
                  .big = 4096,
                  .small = 4092,
                  .sflags = 0};
    gen_prog g = {
        8,  8, 8,       2, sizeof(gen_ring_state), ring_rank, gen_ring_next,
        &c, 1, GEN_RING};
    net *nw = net_new(8);
    ps_err err;
    CHECK_INT(net_set_mesh(nw, 25e9, 5e-6, &err), 0);
    eng_sim *e = eng_new();
    eng_set_count_base(e, base);
    CHECK_INT(eng_run_gen(e, &g, nw, ENG_RENDEZVOUS, res, &err), 0);
    eng_free(e);
    net_free(nw);
}

/* 1F1B with stage times near 2^35 s and transfers that take no time:
 * the makespan, about 2^41 s, is the closed form (m + p - 1)(F + B)
 * exactly (Narayanan et al. 2021, 1F1B's bubble of p - 1 steps; powers of
 * two, so every sum is exact in double). */
static void check_long_times(int64_t base)
{
    sched_stage st[4];
    for (int32_t i = 0; i < 4; i++)
        st[i] = (sched_stage){0x1p35, 0x1p36, 0, 1e9, 0, 0, 0, 0};
    eng_result res;
    run_1f1b(st, 0, NULL, base, &res);
    CHECK(res.makespan == (16 + 4 - 1) * (0x1p35 + 0x1p36));
    CHECK(res.makespan > 0x1p40);
    CHECK_INT(res.ops - base, 4 * 2 * 16 + 2 * 2 * 3 * 16);
}

/* The counters past 2^40: base leaves 40 to go, so every counter of the
 * runs crosses it (a lane has 80 or more ops, the queue 190 pushes). */
static void check_count_base(void)
{
    const int64_t base = ((int64_t)1 << 40) - 40;
    static seen a, b;
    eng_result ra, rb;
    run_pipe(0, &a, &ra);
    run_pipe(base, &b, &rb);
    CHECK(memcmp(&ra.makespan, &rb.makespan, sizeof ra.makespan) == 0);
    CHECK_INT(rb.ops, base + ra.ops);
    CHECK_INT(rb.transfers, base + ra.transfers);
    CHECK_INT(rb.events, base + ra.events);
    CHECK(ra.ops > 40 && ra.events > 40);
    CHECK_INT(b.n, a.n);
    CHECK(a.n <= 1024);
    int same = 1, crossed = 0;
    for (int i = 0; i < a.n && i < 1024; i++) {
        same &= memcmp(&a.op[i], &b.op[i], sizeof a.op[i]) == 0 &&
                a.lane[i] == b.lane[i] && b.index[i] == base + a.index[i];
        crossed |= b.index[i] >= (int64_t)1 << 40;
    }
    CHECK(same);
    CHECK(crossed);
    eng_result ga, gb;
    run_ring(0, &ga);
    run_ring(base, &gb);
    CHECK(memcmp(&ga.makespan, &gb.makespan, sizeof ga.makespan) == 0);
    CHECK_INT(gb.ops, base + ga.ops);
    CHECK_INT(gb.transfers, base + ga.transfers);
    CHECK_INT(ga.transfers, 8 * 14);
    CHECK_INT(gb.events, base + ga.events);
    check_long_times(0);
    check_long_times(base);
}

int main(void)
{
    check_count_base();
    const int32_t N = 1 << 20;
    static int32_t rank[1 << 20];
    for (int32_t i = 0; i < N; i++)
        rank[i] = N - 1 - i;        /* reversed: positions are not ranks */
    int64_t n = (int64_t)N * 3 + 5; /* blocks of 4 and 3 elements */
    gen_ring c = {.rank = rank,
                  .N = N,
                  .steps = 2 * (N - 1),
                  .rs = 1,
                  .rem = (int32_t)(n % N),
                  .big = (double)(n / N + 1) * 4,
                  .small = (double)(n / N) * 4,
                  .sflags = 0};
    gen_prog g = {
        N,  N, N,       2, sizeof(gen_ring_state), NULL, gen_ring_next,
        &c, 1, GEN_RING};
    /* position r = N - 1 at its last two steps: allreduce step s sends
     * block r - 1 - s mod N (sim/gen_ring.h); the first call writes the ops,
     * so run it at step 0, then jump the cursor */
    int32_t r = N - 1;
    prog_op ops[2];
    memset(ops, 0, sizeof ops);
    gen_ring_state st = {0, 0};
    CHECK_INT(gen_ring_next(&g, r, &st, ops), 2);
    CHECK_INT(ops[0].tag, 0);
    CHECK_INT(ops[1].peer, rank[0]); /* the SEND, second: r != 0 */
    CHECK_INT(ops[0].peer, rank[r - 1]);
    for (int32_t s = c.steps - 2; s < c.steps; s++) {
        int64_t bs = ((int64_t)r - 1 - s) % N;
        bs = bs < 0 ? bs + N : bs;
        st = (gen_ring_state){s, (int32_t)bs};
        CHECK_INT(gen_ring_next(&g, r, &st, ops), 2);
        CHECK_INT(ops[1].tag, s);
        CHECK_INT(ops[0].tag, s);
        CHECK_NEAR(ops[1].bytes, bs < c.rem ? 16 : 12);
        int64_t br = bs > 0 ? bs - 1 : N - 1;
        CHECK_NEAR(ops[0].bytes, br < c.rem ? 16 : 12);
        CHECK_INT(ops[1].msg, r);     /* its channel */
        CHECK_INT(ops[0].msg, r - 1); /* its predecessor's */
    }
    CHECK_INT(st.s, c.steps);
    CHECK_INT(gen_ring_next(&g, r, &st, ops), 0);
    /* the totals of that ring, in the engine's types: 2 ops per step and
     * position, one transfer */
    int64_t transfers = (int64_t)N * c.steps, ops_total = 2 * transfers;
    CHECK(transfers > (int64_t)1 << 40);
    CHECK_INT(ops_total, ((int64_t)1 << 42) - ((int64_t)1 << 22));
    return harness_done();
}
