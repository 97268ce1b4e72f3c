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

int main(void)
{
    test_reserve_nothing();
    return harness_done();
}
