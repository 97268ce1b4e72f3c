/* Split backward and the zero-bubble schedules: ZB-H1 / ZB-H2 orders
 * against sail-sg's scheduler, the closed forms of their makespan, bubble
 * and peak activations, 1F1B with W right after B, custom lists with W. */
#include "harness.h"
#include "sched/sched.h"
#include "sched_fixture.h"
#include "sim/eng.h"
#include "sim/mem.h"
#include "step/pipe.h"

#include <stdlib.h>

#define MAXS 16

static sched_stage stages[MAXS];

/* Every stage: F f, B b (input gradient), W w seconds, 1 byte of
 * activations of which W needs wb. */
static void costs(double f, double b, double w, double wb)
{
    for (int i = 0; i < MAXS; i++)
        stages[i] = (sched_stage){f, b, f, 1, 1, 0, w, wb};
}

static sched_spec spec(enum sched_kind kind, int p, int m)
{
    return spec_on(kind, p, 1, m, stages, SCHED_LOOP);
}

typedef struct zb_case {
    int p, m, k; /* k: memory limit in units of p (1: H1, 2: H2) */
    double f, b, w;
    const char *orders[8];
} zb_case;

/* Produced by running sail-sg's unmodified zb.py (create_schedule with
 * cost_comm 0, mem_f 1, mem_b 0, mem_w -1, max_mem k * p, as its runtime's
 * fixed schedule) on these inputs. */
static const zb_case zb_cases[] = {
    {4,
     8,
     1,
     1,
     1,
     1,
     {"F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7",
      "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7",
      "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7",
      "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 "
      "W7"}},
    {4,
     8,
     2,
     1,
     1,
     1,
     {"F0 F1 F2 F3 F4 F5 F6 B0 F7 W0 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6 B7 W7",
      "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 F7 B3 W0 B4 W1 B5 W2 B6 W3 B7 W4 W5 W6 W7",
      "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 W0 B6 W1 B7 W2 W3 W4 W5 W6 W7",
      "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 W0 W1 W2 W3 W4 W5 W6 "
      "W7"}},
    {3,
     5,
     1,
     1,
     2,
     1,
     {"F0 F1 F2 B0 W0 F3 B1 W1 F4 B2 W2 B3 W3 B4 W4",
      "F0 F1 B0 F2 B1 W0 F3 B2 W1 F4 B3 W2 B4 W3 W4",
      "F0 B0 F1 B1 F2 B2 W0 F3 B3 W1 F4 B4 W2 W3 W4"}},
    {5,
     7,
     2,
     1,
     1,
     0.5,
     {"F0 F1 F2 F3 F4 F5 F6 B0 W0 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6",
      "F0 F1 F2 F3 F4 F5 F6 B0 W0 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6",
      "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 W0 W1 B3 W2 W3 B4 W4 B5 W5 B6 W6",
      "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 W0 W1 B5 W2 W3 B6 W4 W5 W6",
      "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 W0 W1 W2 W3 W4 W5 W6"}},
    {2,
     3,
     1,
     2,
     1,
     1,
     {"F0 F1 B0 W0 F2 B1 W1 B2 W2", "F0 B0 F1 B1 W0 F2 B2 W1 W2"}},
    {6,
     4,
     1,
     1,
     1,
     1,
     {"F0 F1 F2 F3 B0 W0 B1 W1 B2 W2 B3 W3",
      "F0 F1 F2 F3 B0 W0 B1 W1 B2 W2 B3 W3",
      "F0 F1 F2 F3 B0 W0 B1 W1 B2 W2 B3 W3",
      "F0 F1 F2 F3 B0 W0 B1 W1 B2 W2 B3 W3",
      "F0 F1 F2 B0 F3 B1 W0 B2 W1 B3 W2 W3",
      "F0 B0 F1 B1 F2 B2 F3 B3 W0 W1 W2 W3"}},
    {1, 3, 1, 1, 1, 1, {"F0 B0 W0 F1 B1 W1 F2 B2 W2"}},
    {3,
     6,
     2,
     1,
     2,
     1,
     {"F0 F1 F2 F3 F4 F5 B0 W0 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5",
      "F0 F1 F2 F3 B0 F4 B1 F5 B2 W0 B3 W1 B4 W2 B5 W3 W4 W5",
      "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 W0 W1 W2 W3 W4 W5"}},
};

static void test_reference_orders(void)
{
    for (size_t c = 0; c < sizeof zb_cases / sizeof zb_cases[0]; c++) {
        const zb_case *z = &zb_cases[c];
        costs(z->f, z->b, z->w, 1);
        sched_spec s = spec(z->k == 2 ? SCHED_ZB_H2 : SCHED_ZB_H1, z->p, z->m);
        for (int r = 0; r < z->p; r++)
            CHECK_STR(order_str(&s, r), z->orders[r]);
        /* and they run, in both p2p modes */
        for (int mode = 0; mode < 2; mode++) {
            outcome o = run_free(&s, (enum eng_p2p)mode);
            CHECK_INT(o.rc, 0);
            prog_free(o.ps);
        }
    }
}

static double makespan_of(const sched_spec *s, enum eng_p2p mode)
{
    outcome o = run_free(s, mode);
    CHECK_INT(o.rc, 0);
    if (o.rc)
        printf("  %s p=%d m=%d: %s\n", sched_name(s->kind), (int)s->p,
               (int)s->m, o.err.msg);
    double t = o.res.makespan;
    if (!o.rc)
        CHECK_NEAR(bubble(o.ps, t),
                   pipe_closed_form_split(s->kind, s->p, s->m, s->stages[0].fwd,
                                          s->stages[0].bwd, s->stages[0].wgt));
    prog_free(o.ps);
    return t;
}

/* Idle time per rank with free links (ZB paper section 3, T_B the input
 * gradient alone): ZB-H1 (p-1)(F+B-W), ZB-H2 (p-1)F, 1F1B with W right
 * after B (p-1)(F+B): the gradient leaves before W, so the cool-down is
 * shorter than 1F1B's (p-1)(F+B+W). Each rank computes m(F+B+W). In
 * DeepSeek-V3's notation (B the full backward) H1's is (p-1)(F+B-2W). */
static void test_zb_closed_form(void)
{
    static const double cs[][3] = {{1, 1, 1},   {1, 2, 1},   {2, 1, 1},
                                   {1, 1, 0.5}, {1.5, 2, 1}, {3, 2, 2}};
    for (int mode = 0; mode < 2; mode++)
        for (int c = 0; c < 6; c++) {
            double f = cs[c][0], b = cs[c][1], w = cs[c][2];
            costs(f, b, w, 0.5);
            for (int p = 2; p <= 8; p += 2)
                for (int k = 1; k <= 4; k++) {
                    int m = k * p + (k == 3); /* one m not a multiple */
                    sched_spec s = spec(SCHED_ZB_H1, p, m);
                    CHECK_NEAR(makespan_of(&s, (enum eng_p2p)mode),
                               m * (f + b + w) + (p - 1) * (f + b - w));
                    s.kind = SCHED_1F1B;
                    s.split = 1;
                    CHECK_NEAR(makespan_of(&s, (enum eng_p2p)mode),
                               m * (f + b + w) + (p - 1) * (f + b));
                }
        }
    /* H2 with equal costs and m >= 2p: only the first forwards' ramp */
    for (int mode = 0; mode < 2; mode++)
        for (int p = 2; p <= 8; p++)
            for (int k = 2; k <= 4; k++) {
                costs(1, 1, 1, 0.5);
                sched_spec s = spec(SCHED_ZB_H2, p, k * p);
                CHECK_NEAR(makespan_of(&s, (enum eng_p2p)mode),
                           3.0 * k * p + (p - 1));
            }
    /* H1's idle time is a third of 1F1B's with F = B = W */
    for (int p = 2; p <= 8; p++) {
        int m = 2 * p;
        costs(1, 1, 1, 1);
        sched_spec s = spec(SCHED_ZB_H1, p, m);
        double h1 = makespan_of(&s, ENG_RENDEZVOUS) - 3.0 * m;
        s.kind = SCHED_1F1B; /* B runs B + W = 2 s as one backward */
        outcome o = run_free(&s, ENG_RENDEZVOUS);
        CHECK_NEAR(h1, (o.res.makespan - 3.0 * m) / 3);
        prog_free(o.ps);
    }
    /* 1F1B with W right after B, every p and m (also m < p) */
    for (int p = 1; p <= 6; p++)
        for (int m = 1; m <= 9; m += 2) {
            costs(1, 1.5, 0.75, 0.5);
            sched_spec s = spec(SCHED_1F1B, p, m);
            s.split = 1;
            CHECK_NEAR(makespan_of(&s, ENG_RENDEZVOUS),
                       m * 3.25 + (p - 1) * 2.5);
        }
    /* outside their conditions the forms are NAN, not wrong */
    CHECK(isnan(pipe_closed_form_split(SCHED_ZB_H1, 4, 8, 1, 1, 2)));
    CHECK(isnan(pipe_closed_form_split(SCHED_ZB_H1, 4, 3, 1, 1, 1)));
    CHECK(isnan(pipe_closed_form_split(SCHED_ZB_H2, 4, 7, 1, 1, 1)));
    CHECK(isnan(pipe_closed_form_split(SCHED_ZB_H2, 4, 8, 1, 2, 1)));
    CHECK(isnan(pipe_closed_form_split(SCHED_GPIPE, 4, 8, 1, 1, 1)));
}

/* Peak activations in units of one microbatch's (1 byte), W needing wb of
 * it: B frees 1 - wb, W frees wb (the ZB paper's M_B, M_W). With m >= 2p,
 * ZB-H1's rank r holds p - r microbatches' activations and r microbatches'
 * W inputs: (p - r) + r wb, so its worst rank (0) holds p, 1F1B's. ZB-H2's
 * rank r: (2p - 1 - 2r) + (2r + 1) wb, about twice. */
static void test_zb_memory(void)
{
    mem_rank h1[MAXS], h2[MAXS], base[MAXS];
    static const double wbs[] = {0, 0.25, 1};
    for (int i = 0; i < 3; i++)
        for (int p = 1; p <= 8; p++)
            for (int k = 1; k <= 3; k++) {
                double wb = wbs[i];
                int m = k * p;
                costs(1, 1, 1, wb);
                sched_spec s = spec(SCHED_1F1B, p, m);
                peaks(&s, base);
                s.kind = SCHED_ZB_H1;
                peaks(&s, h1);
                double worst = 0;
                for (int r = 0; r < p; r++)
                    worst = fmax(worst, h1[r].peak);
                CHECK_NEAR(worst, base[0].peak);
                CHECK_NEAR(base[0].peak, p);
                if (k < 2)
                    continue;
                s.kind = SCHED_ZB_H2;
                peaks(&s, h2);
                for (int r = 0; r < p; r++) {
                    CHECK_NEAR(h1[r].peak, (p - r) + r * wb);
                    CHECK_NEAR(h2[r].peak,
                               (2 * p - 1 - 2 * r) + (2 * r + 1) * wb);
                }
            }
    /* 1F1B with W right after B holds what 1F1B holds */
    costs(1, 1, 1, 0.5);
    sched_spec s = spec(SCHED_1F1B, 4, 8);
    s.split = 1;
    peaks(&s, h1);
    for (int r = 0; r < 4; r++)
        CHECK_NEAR(h1[r].peak, 4 - r);
    /* checkpointing: F keeps the input, R adds the rest, W still frees */
    s.kind = SCHED_ZB_H1;
    s.checkpoint = 1;
    for (int i = 0; i < MAXS; i++)
        stages[i].in_bytes = 0.25;
    peaks(&s, h1);
    CHECK(h1[0].peak > 0);
}

static void test_custom_w(void)
{
    ps_err err;
    sched_action a;
    CHECK_INT(sched_parse_action("W3", 4, 1, &a, &err), 0);
    CHECK_INT(a.kind, PROG_W);
    CHECK_INT(a.mb, 3);
    CHECK_INT(sched_parse_action("W1.c1", 4, 2, &a, &err), 0);
    CHECK_INT(a.kind, PROG_W);
    CHECK_INT(a.chunk, 1);
    CHECK_INT(sched_parse_action("X1", 4, 1, &a, &err), PS_ERR);
    CHECK_STR(err.msg, "bad action 'X1': expected F, B, W, R or FB, a "
                       "microbatch and optionally a chunk, as in F3, B0.c1 "
                       "or FB3/1");

    /* ZB-H1's own order given as a custom list runs the same */
    costs(1, 1, 1, 0.5);
    sched_spec h = spec(SCHED_ZB_H1, 3, 6);
    static sched_action lists[3][18];
    const sched_action *pl[3] = {lists[0], lists[1], lists[2]};
    int32_t n[3];
    for (int r = 0; r < 3; r++)
        CHECK_INT(sched_order(&h, r, lists[r], 18, &n[r], &err), 0);
    sched_spec c = spec(SCHED_CUSTOM, 3, 6);
    c.custom = pl;
    c.ncustom = n;
    for (int mode = 0; mode < 2; mode++) {
        outcome a1 = run_free(&h, (enum eng_p2p)mode),
                a2 = run_free(&c, (enum eng_p2p)mode);
        CHECK_INT(a2.rc, 0);
        CHECK_NEAR(a2.res.makespan, a1.res.makespan);
        CHECK_NEAR(a2.res.makespan, 6 * 3 + 2 * 1);
        prog_free(a1.ps);
        prog_free(a2.ps);
    }
    CHECK_INT(sched_splits(&c), 1);

    /* a unit without W runs B as the full backward: on one rank, F0 B0 W0
     * F1 B1 takes 1 + 1 + 1 + 1 + 2 */
    sched_action one[5] = {act("F0", 2, 1), act("B0", 2, 1), act("W0", 2, 1),
                           act("F1", 2, 1), act("B1", 2, 1)};
    const sched_action *ol[1] = {one};
    int32_t on[1] = {5};
    sched_spec u = spec(SCHED_CUSTOM, 1, 2);
    u.custom = ol;
    u.ncustom = on;
    outcome o = run_free(&u, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    CHECK_NEAR(o.res.makespan, 6);
    prog_free(o.ps);

    /* errors name the rank and the action */
    static const char *bad[][5] = {{"F0", "W0", "B0", "F1", "B1"},
                                   {"F0", "B0", "W0", "W0", "F1"},
                                   {"B0", "F0", "W0", "F1", "B1"},
                                   {"F0", "B0", "F1", "W1", "B1"}};
    static const char *msgs[] = {
        "rank 0: W0 comes before B0", "rank 0: W0 appears twice",
        "rank 0: B0 comes before F0", "rank 0: W1 comes before B1"};
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 5; i++)
            one[i] = act(bad[k][i], 2, 1);
        CHECK_INT(sched_check(&u, &err), PS_ERR);
        CHECK_STR(err.msg, msgs[k]);
    }
}

static void test_parse_zb(void)
{
    enum sched_kind k;
    ps_err err;
    CHECK_INT(sched_parse("zb_h1", &k, &err), 0);
    CHECK_INT(k, SCHED_ZB_H1);
    CHECK_INT(sched_parse("zb_h2", &k, &err), 0);
    CHECK_INT(k, SCHED_ZB_H2);
    CHECK_STR(sched_name(SCHED_ZB_H2), "zb_h2");
    costs(1, 1, 1, 1);
    sched_spec s = spec(SCHED_ZB_H1, 2, 4);
    s.v = 2;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "zb_h1 schedule runs one chunk per rank (got 2); use "
                       "interleaved or a custom schedule");
}

int main(void)
{
    test_reference_orders();
    test_zb_closed_form();
    test_zb_memory();
    test_custom_w();
    test_parse_zb();
    return harness_done();
}
