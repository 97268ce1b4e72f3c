/* Integer widths of the engine's counters (issue 12: at least 1 << 20
 * ranks and 2^40 ops). Each counter that grows with ops is 64-bit
 * (asserted here for the public ones, next to their definitions in
 * eng_cursor.c for the cursor's own); the ones that grow with ranks hold
 * a ring of 1 << 20 positions, driven here to its last steps without
 * running the rest: step tags, blocks and bytes there equal the closed
 * forms, and the ring's op and transfer totals (about 2^42) fit. */
#include <stdint.h>
#include <string.h>

#include "coll.h"
#include "eng.h"
#include "eq.h"
#include "gen_ring.h"
#include "harness.h"
#include "prog.h"

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

int main(void)
{
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
     * block r - 1 - s mod N (gen_ring.h); the first call writes the ops,
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
