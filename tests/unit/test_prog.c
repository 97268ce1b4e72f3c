/* Programs: prog_reserve with no ops at all (a one-rank collective of 0
 * bytes) still gives every lane a block to point into; lanes pointed at
 * NULL + 0, which is undefined and which clang's UBSan reports (found by
 * tests/fuzz/fuzz_scenario.c). */
#include "harness.h"
#include "sim/prog.h"

static void test_reserve_nothing(void)
{
    prog_set *ps = prog_new(2);
    CHECK(ps != NULL);
    CHECK_INT(prog_add_lane(ps, 0), 0);
    CHECK_INT(prog_add_lane(ps, 1), 1);
    int64_t count[2] = {0, 0};
    CHECK_INT(prog_reserve(ps, count), 0);
    CHECK(ps->lanes[0].ops != NULL);
    CHECK(ps->lanes[1].ops != NULL);
    CHECK_INT(ps->lanes[0].cap, 0);
    /* a later run with ops moves to a larger block */
    int64_t more[2] = {3, 1};
    CHECK_INT(prog_reserve(ps, more), 0);
    CHECK(ps->lanes[0].ops != NULL && ps->lanes[1].ops == ps->lanes[0].ops + 3);
    prog_free(ps);
}

/* Replica folding's streaming check (par/fold_stream.c) drops a lane's
 * compared ops from its front, and after the run makes the lane a view of
 * its representative's; a view is never written through, and the next
 * run's pushes give the lane a block of its own again. */
static void test_drop_and_alias(void)
{
    prog_set *ps = prog_new(2);
    CHECK(ps != NULL);
    CHECK_INT(prog_add_lane(ps, 0), 0);
    CHECK_INT(prog_add_lane(ps, 1), 1);
    for (int i = 0; i < 5; i++) {
        prog_op op = prog_compute(PROG_F, 0, 0, i, 1.0 + i, 0);
        CHECK_INT(prog_push(ps, 0, &op), 0);
        CHECK_INT(prog_push(ps, 1, &op), 0);
    }
    prog_drop_front(ps, 1, 3);
    CHECK_INT(ps->lanes[1].n, 2);
    CHECK_INT(ps->lanes[1].ops[0].mb, 3);
    prog_drop_front(ps, 1, 2); /* empty: its block given back */
    CHECK_INT(ps->lanes[1].n, 0);
    CHECK(ps->lanes[1].ops == NULL);
    prog_alias_lane(ps, 1, ps->lanes[0].ops, ps->lanes[0].n);
    CHECK_INT(ps->lanes[1].n, 5);
    CHECK(ps->lanes[1].ops == ps->lanes[0].ops);
    prog_reset(ps, 2);
    CHECK_INT(prog_add_lane(ps, 0), 0);
    CHECK_INT(prog_add_lane(ps, 1), 1);
    prog_op op = prog_compute(PROG_B, 0, 0, 9, 2.0, 0);
    CHECK_INT(prog_push(ps, 1, &op), 0);
    CHECK(ps->lanes[1].ops != ps->lanes[0].ops);
    CHECK_INT(ps->lanes[0].ops[0].mb, 0); /* lane 0 untouched */
    prog_free(ps);
}

int main(void)
{
    test_reserve_nothing();
    test_drop_and_alias();
    return harness_done();
}
