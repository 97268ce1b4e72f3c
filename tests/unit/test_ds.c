/* DeepSeek's bidirectional DualPipe (schedule "dualpipe", sched/ds.c):
 * its per-rank orders against the reference, the bubble of the
 * DeepSeek-V3 report's table for DualPipe and DualPipeV (exact, on every
 * rank's idle time), both pipelines' routing, and the errors. */
#include "harness.h"
#include "sched/impl.h"
#include "sched/sched.h"
#include "sched_fixture.h"
#include "sim/eng.h"

#include <string.h>

#define MAXS 32

static sched_stage stages[MAXS];

/* Every stage: F f, B b (input gradient), W w per chunk. */
static void costs(double f, double b, double w)
{
    for (int i = 0; i < MAXS; i++)
        stages[i] = (sched_stage){f, b, f, 1, 1, 1, w, 0};
}

static sched_spec dual(int p, int m)
{
    return spec_on(SCHED_DUALPIPE, p, 2, m, stages, SCHED_DUAL);
}

/* Rank r's order as action strings: "F0 F2.c1 FB3.c1/0 ..." */
static const char *order(const sched_spec *s, int r)
{
    static char buf[8192];
    static sched_action a[1024];
    static ps_err err;
    int32_t n = 0;
    if (sched_order(s, r, a, 1024, &n, &err))
        return err.msg;
    int len = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < n; i++) {
        char one[48];
        sched_action_str(&a[i], one, sizeof one);
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%s",
                        i ? " " : "", one);
    }
    return buf;
}

/* The orders DualPipe.step (github.com/deepseek-ai/DualPipe,
 * dualpipe/dualpipe.py, unmodified) runs, recorded by running it in
 * Python with the compute and comm methods stubbed: chunk 0 is module 0
 * (stage r, microbatches 0..m/2-1), chunk 1 module 1 (stage p-1-r,
 * microbatches m/2..m-1), an overlapped _forward_backward_compute_chunk
 * is FB<f>/<b>, a W the WeightGradStore.pop of the oldest zero-bubble
 * backward. During development 91 (p, m) with p <= 16, m <= 2p + 24 were
 * compared, every rank identical. */
static const struct {
    int p, m, r;
    const char *want;
} ref[] = {
    {2, 4, 0, "F0 F2.c1 F1 B2.c1 FB3.c1/0 B3.c1 B1 W1"},
    {2, 4, 1, "F2.c1 F0 F3.c1 B0 FB1/2.c1 B1 B3.c1 W3.c1"},
    {4, 8, 0,
     "F0 F1 F2 F4.c1 B4.c1 W4.c1 F5.c1 FB3/5.c1 FB6.c1/0 B6.c1 FB7.c1/1 B7.c1 "
     "B2 W2 B3 W3"},
    {4, 8, 1,
     "F0 F4.c1 F1 F5.c1 F2 B4.c1 FB6.c1/0 FB3/5.c1 FB7.c1/1 B6.c1 B2 B7.c1 B3 "
     "W7.c1 W3"},
    {4, 8, 2,
     "F4.c1 F0 F5.c1 F1 F6.c1 B0 FB2/4.c1 FB7.c1/1 FB3/5.c1 B2 B6.c1 B3 B7.c1 "
     "W3 W7.c1"},
    {4, 8, 3,
     "F4.c1 F5.c1 F6.c1 F0 B0 W0 F1 FB7.c1/1 FB2/4.c1 B2 FB3/5.c1 B3 B6.c1 "
     "W6.c1 B7.c1 W7.c1"},
    {4, 10, 0,
     "F0 F1 F2 F5.c1 B5.c1 W5.c1 F6.c1 FB3/6.c1 FB7.c1/0 FB4/7.c1 FB8.c1/1 "
     "B8.c1 FB9.c1/2 B9.c1 B3 W3 B4 W4"},
    {4, 10, 1,
     "F0 F5.c1 F1 F6.c1 F2 B5.c1 FB7.c1/0 FB3/6.c1 FB8.c1/1 FB4/7.c1 FB9.c1/2 "
     "B8.c1 B3 B9.c1 B4 W9.c1 W4"},
    {4, 10, 2,
     "F5.c1 F0 F6.c1 F1 F7.c1 B0 FB2/5.c1 FB8.c1/1 FB3/6.c1 FB9.c1/2 FB4/7.c1 "
     "B3 B8.c1 B4 B9.c1 W4 W9.c1"},
    {4, 10, 3,
     "F5.c1 F6.c1 F7.c1 F0 B0 W0 F1 FB8.c1/1 FB2/5.c1 FB9.c1/2 FB3/6.c1 B3 "
     "FB4/7.c1 B4 B8.c1 W8.c1 B9.c1 W9.c1"},
    {6, 12, 0,
     "F0 F1 F2 F3 F4 F6.c1 B6.c1 W6.c1 F7.c1 B7.c1 W7.c1 F8.c1 FB5/8.c1 "
     "FB9.c1/0 B9.c1 FB10.c1/1 B10.c1 FB11.c1/2 B11.c1 B3 W3 B4 W4 B5 W5"},
    {6, 12, 1,
     "F0 F1 F2 F6.c1 F3 F7.c1 B6.c1 W6.c1 F8.c1 FB4/7.c1 FB9.c1/0 FB5/8.c1 "
     "FB10.c1/1 B9.c1 FB11.c1/2 B10.c1 B3 B11.c1 B4 W11.c1 B5 W4 W5"},
    {6, 12, 2,
     "F0 F6.c1 F1 F7.c1 F2 F8.c1 F3 B6.c1 FB9.c1/0 FB4/7.c1 FB10.c1/1 FB5/8.c1 "
     "FB11.c1/2 B9.c1 B3 B10.c1 B4 B11.c1 B5 W4 W11.c1 W5"},
    {6, 12, 3,
     "F6.c1 F0 F7.c1 F1 F8.c1 F2 F9.c1 B0 FB3/6.c1 FB10.c1/1 FB4/7.c1 "
     "FB11.c1/2 FB5/8.c1 B3 B9.c1 B4 B10.c1 B5 B11.c1 W10.c1 W5 W11.c1"},
    {6, 12, 4,
     "F6.c1 F7.c1 F8.c1 F0 F9.c1 F1 B0 W0 F2 FB10.c1/1 FB3/6.c1 FB11.c1/2 "
     "FB4/7.c1 B3 FB5/8.c1 B4 B9.c1 B5 B10.c1 W5 B11.c1 W10.c1 W11.c1"},
    {6, 12, 5,
     "F6.c1 F7.c1 F8.c1 F9.c1 F10.c1 F0 B0 W0 F1 B1 W1 F2 FB11.c1/2 FB3/6.c1 "
     "B3 FB4/7.c1 B4 FB5/8.c1 B5 B9.c1 W9.c1 B10.c1 W10.c1 B11.c1 W11.c1"},
    {8, 16, 0,
     "F0 F1 F2 F3 F4 F5 F6 F8.c1 B8.c1 W8.c1 F9.c1 B9.c1 W9.c1 F10.c1 B10.c1 "
     "W10.c1 F11.c1 FB7/11.c1 FB12.c1/0 B12.c1 FB13.c1/1 B13.c1 FB14.c1/2 "
     "B14.c1 FB15.c1/3 B15.c1 B4 W4 B5 W5 B6 W6 B7 W7"},
    {8, 16, 1,
     "F0 F1 F2 F3 F4 F8.c1 F5 F9.c1 B8.c1 W8.c1 F10.c1 B9.c1 W9.c1 F11.c1 "
     "FB6/10.c1 FB12.c1/0 FB7/11.c1 FB13.c1/1 B12.c1 FB14.c1/2 B13.c1 "
     "FB15.c1/3 B14.c1 B4 B15.c1 B5 W15.c1 B6 W5 B7 W6 W7"},
    {8, 16, 2,
     "F0 F1 F2 F8.c1 F3 F9.c1 F4 F10.c1 B8.c1 W8.c1 F11.c1 FB5/9.c1 FB12.c1/0 "
     "FB6/10.c1 FB13.c1/1 FB7/11.c1 FB14.c1/2 B12.c1 FB15.c1/3 B13.c1 B4 "
     "B14.c1 B5 B15.c1 B6 W5 B7 W15.c1 W6 W7"},
    {8, 16, 3,
     "F0 F8.c1 F1 F9.c1 F2 F10.c1 F3 F11.c1 F4 B8.c1 FB12.c1/0 FB5/9.c1 "
     "FB13.c1/1 FB6/10.c1 FB14.c1/2 FB7/11.c1 FB15.c1/3 B12.c1 B4 B13.c1 B5 "
     "B14.c1 B6 B15.c1 B7 W14.c1 W6 W15.c1 W7"},
    {8, 16, 4,
     "F8.c1 F0 F9.c1 F1 F10.c1 F2 F11.c1 F3 F12.c1 B0 FB4/8.c1 FB13.c1/1 "
     "FB5/9.c1 FB14.c1/2 FB6/10.c1 FB15.c1/3 FB7/11.c1 B4 B12.c1 B5 B13.c1 B6 "
     "B14.c1 B7 B15.c1 W6 W14.c1 W7 W15.c1"},
    {8, 16, 5,
     "F8.c1 F9.c1 F10.c1 F0 F11.c1 F1 F12.c1 F2 B0 W0 F3 FB13.c1/1 FB4/8.c1 "
     "FB14.c1/2 FB5/9.c1 FB15.c1/3 FB6/10.c1 B4 FB7/11.c1 B5 B12.c1 B6 B13.c1 "
     "B7 B14.c1 W13.c1 B15.c1 W7 W14.c1 W15.c1"},
    {8, 16, 6,
     "F8.c1 F9.c1 F10.c1 F11.c1 F12.c1 F0 F13.c1 F1 B0 W0 F2 B1 W1 F3 "
     "FB14.c1/2 FB4/8.c1 FB15.c1/3 FB5/9.c1 B4 FB6/10.c1 B5 FB7/11.c1 B6 "
     "B12.c1 B7 B13.c1 W7 B14.c1 W13.c1 B15.c1 W14.c1 W15.c1"},
    {8, 16, 7,
     "F8.c1 F9.c1 F10.c1 F11.c1 F12.c1 F13.c1 F14.c1 F0 B0 W0 F1 B1 W1 F2 B2 "
     "W2 F3 FB15.c1/3 FB4/8.c1 B4 FB5/9.c1 B5 FB6/10.c1 B6 FB7/11.c1 B7 B12.c1 "
     "W12.c1 B13.c1 W13.c1 B14.c1 W14.c1 B15.c1 W15.c1"},
};

static void test_reference_orders(void)
{
    costs(1, 1, 1);
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++) {
        sched_spec s = dual(ref[i].p, ref[i].m);
        CHECK_STR(order(&s, ref[i].r), ref[i].want);
    }
}

/* The worst rank's idle time (makespan - busy), free communication. */
static double worst_idle(const sched_spec *s, double *makespan)
{
    outcome o = run_free(s, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    double worst = 0;
    for (int32_t l = 0; o.rc == 0 && l < o.ps->nlanes; l++) {
        double busy = 0;
        for (int32_t i = 0; i < o.ps->lanes[l].n; i++)
            if (o.ps->lanes[l].ops[i].type == PROG_COMPUTE)
                busy += o.ps->lanes[l].ops[i].seconds;
        if (o.res.makespan - busy > worst)
            worst = o.res.makespan - busy;
    }
    *makespan = o.res.makespan;
    prog_free(o.ps);
    return worst;
}

/* The DeepSeek-V3 report's table (section 3.2.1, Table 2; the DualPipe
 * README repeats it) gives DualPipe's bubble as (PP/2 - 1)(F&B + B - 3W)
 * with PP the number of pipeline stages, F a forward chunk, B a full
 * backward chunk, W its weight part and F&B the overlapped pair. DualPipe
 * on p ranks has PP = p stages; DualPipeV is DualPipe "cut in half": p
 * ranks hold PP = 2p stages (two chunks each, V placement), so its bubble
 * is (2p/2 - 1)(F&B + B - 3W) = (p - 1)(F&B + B - 3W), with F, B and W the
 * times of one chunk. With f = F, b the input-gradient part and w = W of
 * a chunk, B = b + w: the bubble is (p/2 - 1)(F&B + b - 2w) for DualPipe
 * and (p - 1)(F&B + b - 2w) for DualPipeV. Each rank's busy time is
 * m (f + b + w) (DualPipe: m/2 microbatches through each of two chunks;
 * DualPipeV: m through each of two, half as long), the F&B pairs counted
 * at their overlapped length F&B instead of f + b + w each. The forms
 * hold for the worst rank exactly with f = b = w (the zero-bubble papers'
 * setting), for F&B = F + B (pipesim's default, nothing hidden) and F&B =
 * max(F, B) (fb_interference 0). With unequal parts the schedules idle
 * less than the form on their worst rank (e.g. f = 1, b = 1.5, w = 0.5,
 * p = 4: 2 instead of 2.5), so the table's form is an upper bound there,
 * not tested as exact. */
static void test_closed_forms(void)
{
    static const double fbw[][3] = {{1, 1, 1}, {0.25, 0.25, 0.25}};
    for (size_t c = 0; c < sizeof fbw / sizeof fbw[0]; c++) {
        double f = fbw[c][0], b = fbw[c][1], w = fbw[c][2], full = b + w;
        costs(f, b, w);
        for (int p = 2; p <= 8; p += 2)
            for (int m = 2 * p; m <= 2 * p + 6; m += 2)
                for (int k = 0; k < 2; k++) {
                    double fb = k ? (f > full ? f : full) : f + full;
                    sched_spec s = dual(p, m);
                    s.fb_given = k;
                    s.fb_interference = 0;
                    double ms;
                    CHECK_NEAR(worst_idle(&s, &ms),
                               (p / 2.0 - 1) * (fb + full - 3 * w));
                    sched_spec v =
                        spec_on(SCHED_DUALPIPEV, p, 2, m, stages, SCHED_V);
                    v.fb_given = k;
                    v.fb_interference = 0;
                    CHECK_NEAR(worst_idle(&v, &ms),
                               (p - 1.0) * (fb + full - 3 * w));
                }
    }
}

/* The two pipelines: chunk 0's forward goes rank r -> r + 1, chunk 1's
 * r -> r - 1, and every transfer pairs (prog_seal checks that), also
 * under Megatron-style rendezvous with real links. */
static void test_routing(void)
{
    costs(1, 1, 1);
    sched_spec s = dual(4, 8);
    outcome o = run_mesh(&s, ENG_RENDEZVOUS, 1e9, 1e-5);
    CHECK_INT(o.rc, 0);
    for (int32_t l = 0; o.rc == 0 && l < o.ps->nlanes; l++)
        for (int32_t i = 0; i < o.ps->lanes[l].n; i++) {
            const prog_op *op = &o.ps->lanes[l].ops[i];
            if (op->type == PROG_SEND && op->kind == PROG_F)
                CHECK_INT(op->peer, op->mb < 4 ? l + 1 : l - 1);
            if (op->type == PROG_COMPUTE && op->mb >= 0)
                CHECK_INT(op->stage, op->chunk == 0 ? l : 3 - l);
        }
    prog_free(o.ps);
}

static void test_errors(void)
{
    ps_err err;
    costs(1, 1, 1);
    sched_spec s = dual(3, 8);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "dualpipe schedule needs an even number of stages and "
                       "2 chunks per rank, got 3 stages, 2 chunks");
    s = dual(4, 6);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "dualpipe schedule needs an even number of "
                       "microbatches, at least twice the stages (8), got 6, "
                       "as DeepSeek's DualPipe asserts");
    s = dual(4, 9);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    s = dual(4, 8);
    s.placement = SCHED_LOOP;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "dualpipe schedule places each stage on two ranks "
                       "(leave chunk_placement out)");
    enum sched_kind k;
    CHECK_INT(sched_parse("dualpipe", &k, &err), 0);
    CHECK_INT(k, SCHED_DUALPIPE);
    CHECK_INT(sched_default_placement(k), SCHED_DUAL);
}

int main(void)
{
    test_reference_orders();
    test_closed_forms();
    test_routing();
    test_errors();
    return harness_done();
}
