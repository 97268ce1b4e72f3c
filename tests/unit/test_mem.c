/* Memory ledger (sim/mem.c): peaks, the time of the first peak, the final total
 * and the visited timeline, on programs whose times are set by hand (no
 * engine), for a one-lane rank and for a rank whose compute ops sit on two
 * lanes (merged by start time, frees before allocations at a tie). */
#include <stdlib.h>

#include "harness.h"
#include "sim/mem.h"
#include "sim/prog.h"

typedef struct seen {
    int n;
    int32_t rank[32];
    double t[32], bytes[32];
} seen;

static void record(void *ctx, int32_t rank, double t, double bytes)
{
    seen *s = ctx;
    if (s->n < 32) {
        s->rank[s->n] = rank;
        s->t[s->n] = t;
        s->bytes[s->n] = bytes;
    }
    s->n++;
}

/* A compute op that ran over [t0, t1] and changes memory by mem. */
static void push(prog_set *ps, int32_t lane, double t0, double t1, double mem)
{
    prog_op op =
        prog_compute(mem >= 0 ? PROG_F : PROG_B, 0, 0, 0, t1 - t0, mem);
    op.t_start = t0;
    op.t_end = t1;
    CHECK_INT(prog_push(ps, lane, &op), PS_OK);
}

int main(void)
{
    ps_err err;

    /* rank 0: F F B B (GPipe-like), 10 bytes static. F allocates at its
     * start, B frees at its end: 10 -> 15 (t=0) -> 18 (t=1) -> 13 (t=3)
     * -> 10 (t=4). rank 1: one F that allocates 7 and nothing frees. */
    prog_set *ps = prog_new(2);
    int32_t l0 = prog_add_lane(ps, 0), l1 = prog_add_lane(ps, 1);
    push(ps, l0, 0, 1, 5);
    push(ps, l0, 1, 2, 3);
    push(ps, l0, 2, 3, -5);
    push(ps, l0, 3, 4, -3);
    push(ps, l1, 0.5, 1.5, 7);
    push(ps, l1, 2, 2.5, 0); /* no change: no visit */
    double statics[2] = {10, 0};
    mem_rank out[2];
    seen s = {0};
    CHECK_INT(mem_ledger(ps, statics, out, record, &s, &err), PS_OK);
    CHECK(out[0].static_bytes == 10);
    CHECK(out[0].peak == 18);
    CHECK(out[0].t_peak == 1);
    CHECK(out[0].final == 10);
    CHECK(out[1].static_bytes == 0);
    CHECK(out[1].peak == 7);
    CHECK(out[1].t_peak == 0.5);
    CHECK(out[1].final == 7);
    /* baselines first, then per lane in program order */
    CHECK_INT(s.n, 7);
    const int32_t want_rank[7] = {0, 1, 0, 0, 0, 0, 1};
    const double want_t[7] = {0, 0, 0, 1, 3, 4, 0.5};
    const double want_b[7] = {10, 0, 15, 18, 13, 10, 7};
    for (int i = 0; i < 7 && i < s.n; i++) {
        CHECK_INT(s.rank[i], want_rank[i]);
        CHECK(s.t[i] == want_t[i]);
        CHECK(s.bytes[i] == want_b[i]);
    }
    /* NULL static bytes: all zero; no visitor */
    CHECK_INT(mem_ledger(ps, NULL, out, NULL, NULL, &err), PS_OK);
    CHECK(out[0].peak == 8);
    CHECK(out[0].final == 0);
    prog_free(ps);

    /* one rank, two lanes (compute + e.g. an OPT on a sync lane): merged by
     * time. Lane A: +4 at [0,1], -4 ends at 3. Lane B: +6 starts at 3 (the
     * free at 3 comes first, so the peak is 6 at 3, not 10), -6 ends at 5.
     */
    ps = prog_new(1);
    int32_t a = prog_add_lane(ps, 0), b = prog_add_lane(ps, 0);
    push(ps, a, 0, 1, 4);
    push(ps, a, 2, 3, -4);
    push(ps, b, 3, 4, 6);
    push(ps, b, 4, 5, -6);
    double st1 = 1;
    mem_rank one;
    seen s2 = {0};
    CHECK_INT(mem_ledger(ps, &st1, &one, record, &s2, &err), PS_OK);
    CHECK(one.peak == 7);
    CHECK(one.t_peak == 3);
    CHECK(one.final == 1);
    CHECK_INT(s2.n, 5);
    const double want2_t[5] = {0, 0, 3, 3, 5};
    const double want2_b[5] = {1, 5, 1, 7, 1};
    for (int i = 0; i < 5 && i < s2.n; i++) {
        CHECK(s2.t[i] == want2_t[i]);
        CHECK(s2.bytes[i] == want2_b[i]);
    }
    prog_free(ps);
    return harness_done();
}
