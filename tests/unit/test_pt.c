/* PyTorch's schedules (ScheduleLoopedBFS, ScheduleInterleaved1F1B,
 * ScheduleInterleavedZeroBubble, ScheduleZBVZeroBubble), the V placement,
 * the pytorch p2p lowering and the forward-only schedule. */
#include "harness.h"
#include "sched/sched.h"
#include "sched_fixture.h"
#include "sim/eng.h"
#include "sim/mem.h"

#include <stdlib.h>

#define MAXS 64

static sched_stage stages[MAXS];

/* Every stage: F f, B b (input gradient), W w; 1 byte of activations. */
static void costs(double f, double b, double w)
{
    for (int i = 0; i < MAXS; i++)
        stages[i] = (sched_stage){f, b, f, 1, 1, 0, w, 1};
}

static sched_spec spec(enum sched_kind kind, int p, int v, int m)
{
    return spec_on(kind, p, v, m, stages, sched_default_placement(kind));
}

/* Rank r's order in PyTorch's action notation: global stage, F / I (B of
 * a unit that has a W) / B / W, microbatch: "0F0 4I0 4W0". */
static const char *pt_str(const sched_spec *s, int r)
{
    static char buf[8192];
    static sched_action a[2048];
    static uint8_t has_w[2048];
    static ps_err err;
    int32_t n = 0;
    if (sched_order(s, r, a, 2048, &n, &err))
        return err.msg;
    memset(has_w, 0, sizeof has_w);
    for (int32_t i = 0; i < n; i++)
        if (a[i].kind == PROG_W)
            has_w[a[i].chunk * s->m + a[i].mb] = 1;
    int len = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < n; i++) {
        char k = prog_kind_letter(a[i].kind);
        if (a[i].kind == PROG_B && has_w[a[i].chunk * s->m + a[i].mb])
            k = 'I';
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%d%c%d",
                        i ? " " : "",
                        (int)sched_stage_of(s->placement, s->p, a[i].chunk, r),
                        k, (int)a[i].mb);
        if (a[i].kind == SCHED_FB) /* OVERLAP_F_B: its F, then its B */
            len += snprintf(
                buf + len, sizeof buf - (size_t)len, " %dB%d",
                (int)sched_stage_of(s->placement, s->p, a[i].bchunk, r),
                (int)a[i].bmb);
    }
    return buf;
}

typedef struct pt_case {
    const char *kind;
    int p, v, m;
    const char *orders[8];
} pt_case;

/* The per-rank orders (None slots dropped) of the generators of
 * torch/distributed/pipelining/schedules.py, run in Python on these
 * inputs: _calculate_single_rank_operations of each class (plus
 * _add_bubbles_to_actions for the interleaved zero bubble one). */
static const pt_case pt_cases[] = {
    /* ScheduleDualPipeV, each OVERLAP_F_B written as its F then its B */
    {"dualpipev",
     2,
     2,
     4,
     {"0F0 0F1 0F2 3F0 3I0 3W0 3F1 0F3 3B1 3F2 0B0 3B2 3F3 0B1 3B3 0I2 0W2 "
      "0I3 0W3",
      "1F0 2F0 1F1 2F1 1F2 2B0 2F2 1B0 1F3 2B1 2F3 1B1 2B2 1B2 2I3 1I3 2W3 "
      "1W3"}},
    {"dualpipev",
     3,
     2,
     7,
     {"0F0 0F1 0F2 0F3 0F4 5F0 5I0 5W0 5F1 5I1 5W1 5F2 0F5 5B2 5F3 0B0 0F6 "
      "5B3 5F4 0B1 5B4 5F5 0B2 5B5 5F6 0B3 5B6 0I4 0W4 0I5 0W5 0I6 0W6",
      "1F0 1F1 1F2 4F0 1F3 4F1 4I0 4W0 4F2 1F4 4B1 4F3 1B0 1F5 4B2 4F4 1B1 "
      "1F6 4B3 4F5 1B2 4B4 4F6 1B3 4B5 1B4 4I6 1I5 4W6 1I6 1W5 1W6",
      "2F0 3F0 2F1 3F1 2F2 3F2 2F3 3B0 3F3 2B0 2F4 3B1 3F4 2B1 2F5 3B2 3F5 "
      "2B2 2F6 3B3 3F6 2B3 3B4 2B4 3B5 2I5 3I6 2I6 2W5 3W6 2W6"}},
    {"looped_bfs",
     3,
     2,
     4,
     {"0F0 0F1 0F2 0F3 3F0 3F1 3F2 3F3 3B3 3B2 3B1 3B0 0B3 0B2 0B1 0B0",
      "1F0 1F1 1F2 1F3 4F0 4F1 4F2 4F3 4B3 4B2 4B1 4B0 1B3 1B2 1B1 1B0",
      "2F0 2F1 2F2 2F3 5F0 5F1 5F2 5F3 5B3 5B2 5B1 5B0 2B3 2B2 2B1 2B0"}},
    {"looped_bfs",
     2,
     3,
     3,
     {"0F0 0F1 0F2 2F0 2F1 2F2 4F0 4F1 4F2 4B2 4B1 4B0 2B2 2B1 2B0 0B2 0B1 0B0",
      "1F0 1F1 1F2 3F0 3F1 3F2 5F0 5F1 5F2 5B2 5B1 5B0 3B2 3B1 3B0 1B2 1B1 "
      "1B0"}},
    {"interleaved_pytorch",
     4,
     2,
     10,
     {"0F0 0F1 0F2 0F3 0F4 4F0 4F1 4F2 4F3 4F4 0F5 0F6 4B0 0F7 4B1 0F8 4B2 0F9 "
      "4B3 4F5 4B4 4F6 0B0 4F7 0B1 4F8 0B2 4F9 0B3 0B4 4B5 4B6 4B7 4B8 4B9 0B5 "
      "0B6 0B7 0B8 0B9",
      "1F0 1F1 1F2 1F3 1F4 5F0 5F1 5F2 5F3 5F4 5B0 1F5 5B1 1F6 5B2 1F7 5B3 1F8 "
      "5B4 1F9 1B0 5F5 1B1 5F6 1B2 5F7 1B3 5F8 1B4 5F9 5B5 5B6 5B7 5B8 5B9 1B5 "
      "1B6 1B7 1B8 1B9",
      "2F0 2F1 2F2 2F3 2F4 6F0 6F1 6F2 6B0 6F3 6B1 6F4 6B2 2F5 6B3 2F6 6B4 2F7 "
      "2B0 2F8 2B1 2F9 2B2 6F5 2B3 6F6 2B4 6F7 6B5 6F8 6B6 6F9 6B7 6B8 6B9 2B5 "
      "2B6 2B7 2B8 2B9",
      "3F0 3F1 3F2 3F3 3F4 7F0 7B0 7F1 7B1 7F2 7B2 7F3 7B3 7F4 7B4 3F5 3B0 3F6 "
      "3B1 3F7 3B2 3F8 3B3 3F9 3B4 7F5 7B5 7F6 7B6 7F7 7B7 7F8 7B8 7F9 7B9 3B5 "
      "3B6 3B7 3B8 3B9"}},
    {"interleaved_pytorch",
     3,
     2,
     3,
     {"0F0 0F1 0F2 3F0 3F1 3F2 3B0 3B1 3B2 0B0 0B1 0B2",
      "1F0 1F1 1F2 4F0 4F1 4F2 4B0 4B1 4B2 1B0 1B1 1B2",
      "2F0 2F1 2F2 5F0 5B0 5F1 5B1 5F2 5B2 2B0 2B1 2B2"}},
    {"interleaved_zb",
     4,
     2,
     8,
     {"0F0 0F1 0F2 0F3 4F0 4F1 4F2 4F3 4I0 4W0 0F4 4I1 4W1 0F5 4I2 4W2 0F6 4I3 "
      "4W3 0F7 0I0 0W0 4F4 0I1 0W1 4F5 0I2 0W2 4F6 0I3 0W3 4F7 4I4 4W4 4I5 4W5 "
      "4I6 4W6 4I7 4W7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7",
      "1F0 1F1 1F2 1F3 5F0 5F1 5F2 5I0 5F3 5I1 5W0 1F4 5I2 5W1 1F5 5I3 5W2 1F6 "
      "1I0 5W3 1F7 1I1 1W0 5F4 1I2 1W1 5F5 1I3 1W2 5F6 5I4 1W3 5F7 5I5 5W4 5I6 "
      "5W5 5I7 5W6 1I4 5W7 1I5 1W4 1I6 1W5 1I7 1W6 1W7",
      "2F0 2F1 2F2 2F3 6F0 6F1 6I0 6F2 6I1 6F3 6I2 6W0 2F4 6I3 6W1 2F5 2I0 6W2 "
      "2F6 2I1 6W3 2F7 2I2 2W0 6F4 2I3 2W1 6F5 6I4 2W2 6F6 6I5 2W3 6F7 6I6 6W4 "
      "6I7 6W5 2I4 6W6 2I5 6W7 2I6 2W4 2I7 2W5 2W6 2W7",
      "3F0 3F1 3F2 3F3 7F0 7I0 7F1 7I1 7F2 7I2 7F3 7I3 7W0 3F4 3I0 7W1 3F5 3I1 "
      "7W2 3F6 3I2 7W3 3F7 3I3 3W0 7F4 7I4 3W1 7F5 7I5 3W2 7F6 7I6 3W3 7F7 7I7 "
      "7W4 3I4 7W5 3I5 7W6 3I6 7W7 3I7 3W4 3W5 3W6 3W7"}},
    {"interleaved_zb",
     3,
     3,
     5,
     {"0F0 0F1 0F2 0F3 0F4 3F0 3F1 3F2 3F3 3F4 6F0 6F1 6F2 6I0 6W0 6F3 6I1 6W1 "
      "6F4 6I2 6W2 6I3 6W3 6I4 6W4 3I0 3W0 3I1 3W1 3I2 3W2 3I3 3W3 3I4 3W4 0I0 "
      "0W0 0I1 0W1 0I2 0W2 0I3 0W3 0I4 0W4",
      "1F0 1F1 1F2 1F3 1F4 4F0 4F1 4F2 4F3 4F4 7F0 7F1 7I0 7F2 7I1 7W0 7F3 7I2 "
      "7W1 7F4 7I3 7W2 7I4 7W3 4I0 7W4 4I1 4W0 4I2 4W1 4I3 4W2 4I4 4W3 1I0 4W4 "
      "1I1 1W0 1I2 1W1 1I3 1W2 1I4 1W3 1W4",
      "2F0 2F1 2F2 2F3 2F4 5F0 5F1 5F2 5F3 5F4 8F0 8I0 8F1 8I1 8F2 8I2 8W0 8F3 "
      "8I3 8W1 8F4 8I4 8W2 5I0 8W3 5I1 8W4 5I2 5W0 5I3 5W1 5I4 5W2 2I0 5W3 2I1 "
      "5W4 2I2 2W0 2I3 2W1 2I4 2W2 2W3 2W4"}},
    {"interleaved_zb",
     2,
     2,
     2,
     {"0F0 0F1 2F0 2F1 2I0 2W0 2I1 2W1 0I0 0W0 0I1 0W1",
      "1F0 1F1 3F0 3I0 3F1 3I1 3W0 1I0 3W1 1I1 1W0 1W1"}},
    {"zbv",
     4,
     2,
     8,
     {"0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7I0 7W0 7F1 7I1 7W1 7F2 7I2 7W2 7F3 7I3 "
      "7W3 0F7 0I0 0W0 7F4 7I4 7W4 0I1 0W1 7F5 7I5 7W5 0I2 0W2 7F6 7I6 7W6 0I3 "
      "0W3 7F7 7I7 7W7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7",
      "1F0 1F1 1F2 1F3 1F4 6F0 1F5 6F1 6I0 6W0 6F2 6I1 6W1 6F3 6I2 6W2 1F6 1I0 "
      "1W0 6F4 6I3 6W3 1F7 1I1 1W1 6F5 6I4 6W4 1I2 1W2 6F6 6I5 6W5 1I3 1W3 6F7 "
      "6I6 6W6 1I4 6I7 1I5 1W4 1I6 1W5 1I7 1W6 6W7 1W7",
      "2F0 2F1 2F2 5F0 2F3 5F1 2F4 5F2 5I0 5W0 5F3 5I1 5W1 2F5 2I0 2W0 5F4 5I2 "
      "5W2 2F6 2I1 2W1 5F5 5I3 5W3 2F7 2I2 2W2 5F6 5I4 5W4 2I3 2W3 5F7 5I5 5W5 "
      "2I4 5I6 2I5 5I7 2I6 2W4 2I7 2W5 5W6 5W7 2W6 2W7",
      "3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 4I0 4W0 3F4 3I0 3W0 4F4 4I1 4W1 3F5 3I1 "
      "3W1 4F5 4I2 4W2 3F6 3I2 3W2 4F6 4I3 4W3 3F7 3I3 3W3 4F7 4I4 4W4 3I4 4I5 "
      "3I5 4I6 3I6 4I7 3I7 3W4 4W5 4W6 4W7 3W5 3W6 3W7"}},
    {"zbv",
     3,
     2,
     4,
     {"0F0 0F1 0F2 0F3 5F0 5I0 5W0 5F1 5I1 5W1 5F2 5I2 5W2 0I0 0W0 5F3 5I3 5W3 "
      "0I1 0W1 0I2 0W2 0I3 0W3",
      "1F0 1F1 1F2 4F0 1F3 4F1 4I0 4W0 4F2 4I1 4W1 1I0 1W0 4F3 4I2 4W2 1I1 1W1 "
      "4I3 4W3 1I2 1I3 1W2 1W3",
      "2F0 3F0 2F1 3F1 2F2 3F2 3I0 3W0 2F3 2I0 2W0 3F3 3I1 3W1 2I1 2W1 3I2 3W2 "
      "2I2 3I3 2I3 2W2 3W3 2W3"}},
    {"zbv", 2, 2, 1, {"0F0 3F0 3I0 3W0 0I0 0W0", "1F0 2F0 2I0 2W0 1I0 1W0"}},
};

static void test_reference_orders(void)
{
    costs(1, 1, 1);
    ps_err err;
    for (size_t c = 0; c < sizeof pt_cases / sizeof pt_cases[0]; c++) {
        const pt_case *z = &pt_cases[c];
        enum sched_kind k;
        CHECK_INT(sched_parse(z->kind, &k, &err), 0);
        sched_spec s = spec(k, z->p, z->v, z->m);
        for (int r = 0; r < z->p; r++)
            CHECK_STR(pt_str(&s, r), z->orders[r]);
    }
}

/* With m a multiple of p, PyTorch's interleaved 1F1B is Megatron's. */
static void test_interleaved_equals_megatron(void)
{
    costs(1, 2, 0);
    for (int p = 1; p <= 4; p++)
        for (int v = 2; v <= 3; v++)
            for (int k = 1; k <= 3; k++) {
                sched_spec a = spec(SCHED_INTERLEAVED, p, v, k * p);
                sched_spec b = spec(SCHED_INTERLEAVED_PT, p, v, k * p);
                for (int r = 0; r < p; r++) {
                    char want[8192];
                    snprintf(want, sizeof want, "%s", pt_str(&a, r));
                    CHECK_STR(pt_str(&b, r), want);
                }
            }
}

/* Each W starts after its own B ended (same lane, stage, microbatch). */
static void check_w_after_b(const prog_set *ps, int m)
{
    static double b_end[MAXS * 64];
    for (int32_t l = 0; l < ps->nlanes; l++)
        for (int32_t i = 0; i < ps->lanes[l].n; i++) {
            const prog_op *op = &ps->lanes[l].ops[i];
            if (op->type != PROG_COMPUTE || op->mb >= 64 || m > 64)
                continue;
            if (op->kind == PROG_B)
                b_end[op->stage * 64 + op->mb] = op->t_end;
            if (op->kind == PROG_W)
                CHECK(op->t_start >= b_end[op->stage * 64 + op->mb] - 1e-12);
        }
}

/* Every schedule completes in both modes with every p, v and m it
 * accepts, and memory returns to zero. */
static void test_all_run(void)
{
    static const enum sched_kind kinds[] = {
        SCHED_LOOPED_BFS, SCHED_INTERLEAVED_PT, SCHED_INTERLEAVED_ZB,
        SCHED_ZBV,        SCHED_FORWARD_ONLY,   SCHED_DUALPIPEV};
    costs(1, 1, 0.5);
    ps_err err;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int p = 1; p <= 6; p++)
            for (int v = 1; v <= 3; v++)
                for (int m = 1; m <= 13; m += 3) {
                    sched_spec s = spec(kinds[k], p, v, m);
                    if (sched_check(&s, &err))
                        continue;
                    for (int mode = 0; mode < 2; mode++) {
                        outcome o = run_free(&s, (enum eng_p2p)mode);
                        CHECK_INT(o.rc, 0);
                        if (o.rc)
                            printf("  %s p=%d v=%d m=%d: %s\n",
                                   sched_name(s.kind), p, v, m, o.err.msg);
                        mem_rank mr[8];
                        CHECK_INT(mem_ledger(o.ps, NULL, mr, NULL, NULL, &err),
                                  0);
                        for (int r = 0; r < p; r++)
                            CHECK_NEAR(mr[r].final, 0);
                        check_w_after_b(o.ps, m);
                        prog_free(o.ps);
                    }
                }
}

/* ZB-V and interleaved zero bubble with F = B = W (per chunk) and
 * m >= 2p: only the warm-up ramp of (p-1) forwards is idle, makespan
 * 2m(F+B+W) + (p-1)F with two chunks per rank; ZB-V's peak activations
 * on every rank equal 1F1B's worst (2p chunk activations: the
 * sail-sg README's "1x"). LoopedBFS and PyTorch's interleaved 1F1B:
 * (p-1)(F+B+W) idle, as Megatron's interleaved schedule with v = 2. */
static void test_pt_closed_forms(void)
{
    costs(0.5, 0.5, 0.5);
    for (int mode = 0; mode < 2; mode++)
        for (int p = 2; p <= 6; p++)
            for (int k = 2; k <= 4; k++) {
                int m = k * p;
                sched_spec s = spec(SCHED_ZBV, p, 2, m);
                outcome o = run_free(&s, (enum eng_p2p)mode);
                CHECK_NEAR(o.res.makespan, 2 * m * 1.5 + (p - 1) * 0.5);
                ps_err err;
                mem_rank mr[8];
                CHECK_INT(mem_ledger(o.ps, NULL, mr, NULL, NULL, &err), 0);
                for (int r = 0; r < p; r++)
                    CHECK_NEAR(mr[r].peak, 2 * p);
                prog_free(o.ps);
                s = spec(SCHED_INTERLEAVED_ZB, p, 2, m);
                o = run_free(&s, (enum eng_p2p)mode);
                CHECK_NEAR(o.res.makespan, 2 * m * 1.5 + (p - 1) * 0.5);
                prog_free(o.ps);
                s = spec(SCHED_LOOPED_BFS, p, 2, m);
                o = run_free(&s, (enum eng_p2p)mode);
                CHECK_NEAR(o.res.makespan, 2 * m * 1.5 + (p - 1) * 1.5);
                prog_free(o.ps);
                s = spec(SCHED_INTERLEAVED_PT, p, 2, m);
                o = run_free(&s, (enum eng_p2p)mode);
                CHECK_NEAR(o.res.makespan, 2 * m * 1.5 + (p - 1) * 1.5);
                prog_free(o.ps);
            }
    /* forward only: (m + p - 1) F, nothing kept */
    for (int p = 1; p <= 6; p++)
        for (int m = 1; m <= 9; m += 4) {
            costs(1, 0, 0);
            sched_spec s = spec(SCHED_FORWARD_ONLY, p, 1, m);
            outcome o = run_free(&s, ENG_RENDEZVOUS);
            CHECK_NEAR(o.res.makespan, m + p - 1.0);
            ps_err err;
            mem_rank mr[8];
            CHECK_INT(mem_ledger(o.ps, NULL, mr, NULL, NULL, &err), 0);
            CHECK_NEAR(mr[0].peak, 0);
            prog_free(o.ps);
        }
}

/* LoopedBFS's orders as custom lists: Megatron's paired lowering
 * deadlocks under rendezvous (a rank sends every chunk-0 output before it
 * receives any chunk-1 input), PyTorch's runtime runs them: with
 * pytorch_p2p they run as the built-in. */
static void test_looped_bfs_custom(void)
{
    costs(1, 2, 0);
    sched_spec b = spec(SCHED_LOOPED_BFS, 2, 2, 4);
    static sched_action lists[2][32];
    const sched_action *pl[2] = {lists[0], lists[1]};
    int32_t n[2];
    ps_err err;
    for (int r = 0; r < 2; r++)
        CHECK_INT(sched_order(&b, r, lists[r], 32, &n[r], &err), 0);
    sched_spec c = spec(SCHED_CUSTOM, 2, 2, 4);
    c.custom = pl;
    c.ncustom = n;
    outcome o = run_free(&c, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, PS_ERR);
    CHECK(strstr(o.err.msg, "deadlock") != NULL);
    prog_free(o.ps);
    c.pytorch_p2p = 1;
    o = run_free(&c, ENG_RENDEZVOUS);
    outcome ob = run_free(&b, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    CHECK_NEAR(o.res.makespan, ob.res.makespan);
    prog_free(o.ps);
    prog_free(ob.ps);
    /* interleaved zero bubble's orders too */
    b = spec(SCHED_INTERLEAVED_ZB, 4, 2, 8);
    static sched_action zl[4][64];
    const sched_action *zp[4] = {zl[0], zl[1], zl[2], zl[3]};
    int32_t zn[4];
    for (int r = 0; r < 4; r++)
        CHECK_INT(sched_order(&b, r, zl[r], 64, &zn[r], &err), 0);
    c = spec(SCHED_CUSTOM, 4, 2, 8);
    c.custom = zp;
    c.ncustom = zn;
    c.pytorch_p2p = 1;
    o = run_free(&c, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    prog_free(o.ps);
    /* forward-only custom lists are accepted */
    sched_action f0[2] = {{.kind = PROG_F, .mb = 0}, {.kind = PROG_F, .mb = 1}};
    const sched_action *fl[2] = {f0, f0};
    int32_t fn[2] = {2, 2};
    c = spec(SCHED_CUSTOM, 2, 1, 2);
    c.custom = fl;
    c.ncustom = fn;
    costs(1, 0, 0);
    o = run_free(&c, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    CHECK_NEAR(o.res.makespan, 3);
    prog_free(o.ps);
}

/* The V placement: chunk 0 of rank r is stage r, chunk 1 stage 2p-1-r. */
static void test_placement(void)
{
    CHECK_INT(sched_stage_of(SCHED_V, 4, 0, 1), 1);
    CHECK_INT(sched_stage_of(SCHED_V, 4, 1, 1), 6);
    CHECK_INT(sched_stage_of(SCHED_V, 4, 1, 0), 7);
    CHECK_INT(sched_rank_of(SCHED_V, 4, 7), 0);
    CHECK_INT(sched_rank_of(SCHED_V, 4, 4), 3);
    CHECK_INT(sched_stage_of(SCHED_LOOP, 4, 1, 1), 5);
    CHECK_INT(sched_rank_of(SCHED_LOOP, 4, 5), 1);
    ps_err err;
    costs(1, 1, 1);
    sched_spec s = spec(SCHED_ZBV, 4, 2, 8);
    s.placement = SCHED_LOOP;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "zbv schedule needs chunk_placement 'v' (PyTorch's "
                       "ScheduleZBVZeroBubble places stages in a V)");
    s = spec(SCHED_ZBV, 4, 3, 8);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "chunk_placement 'v' needs 2 chunks per rank "
                       "(virtual_stages 2), got 3");
    s = spec(SCHED_INTERLEAVED_PT, 4, 2, 8);
    s.placement = SCHED_V;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg,
              "interleaved_pytorch schedule runs on chunk_placement 'loop', "
              "not 'v'");
    s = spec(SCHED_DUALPIPEV, 4, 2, 7);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "dualpipev schedule needs at least as many "
                       "microbatches as stages (8), got 7, as PyTorch's "
                       "ScheduleDualPipeV requires");
    s = spec(SCHED_INTERLEAVED_ZB, 2, 2, 5);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "interleaved_zb schedule needs microbatches (5) to be "
                       "a multiple of the number of rounds (2 = max(1, m / "
                       "p)), as PyTorch requires");
    /* the tip of the V stays on rank p-1: no transfer there */
    s = spec(SCHED_ZBV, 2, 2, 2);
    outcome o = run_free(&s, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    int sends = 0;
    for (int32_t i = 0; i < o.ps->lanes[1].n; i++)
        sends += o.ps->lanes[1].ops[i].type == PROG_SEND;
    CHECK_INT(sends, 2 * 2); /* rank 1: stage 1 -> 2 local, 2 -> 3 remote */
    prog_free(o.ps);
}

static void test_aliases(void)
{
    static const struct {
        const char *name;
        enum sched_kind kind;
    } al[] = {{"ScheduleGPipe", SCHED_GPIPE},
              {"schedule1f1b", SCHED_1F1B},
              {"SCHEDULEINTERLEAVED1F1B", SCHED_INTERLEAVED_PT},
              {"ScheduleLoopedBFS", SCHED_LOOPED_BFS},
              {"ScheduleInterleavedZeroBubble", SCHED_INTERLEAVED_ZB},
              {"ScheduleZBVZeroBubble", SCHED_ZBV},
              {"zbv", SCHED_ZBV},
              {"forward_only", SCHED_FORWARD_ONLY},
              {"ScheduleDualPipeV", SCHED_DUALPIPEV}};
    ps_err err;
    for (size_t i = 0; i < sizeof al / sizeof al[0]; i++) {
        enum sched_kind k = SCHED_CUSTOM;
        CHECK_INT(sched_parse(al[i].name, &k, &err), 0);
        CHECK_INT(k, al[i].kind);
    }
    enum sched_kind k;
    CHECK_INT(sched_parse("ScheduleFoo", &k, &err), PS_ERR);
}

int main(void)
{
    test_reference_orders();
    test_interleaved_equals_megatron();
    test_all_run();
    test_pt_closed_forms();
    test_looped_bfs_custom();
    test_placement();
    test_aliases();
    return harness_done();
}
