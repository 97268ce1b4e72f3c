/* Overlapped forward-backward actions (FB, DualPipe's F&B): parsing and
 * printing, their duration (overlap_fb, fb_interference), their memory
 * (the forward's allocation and the backward's release over one span),
 * their transfers, dualpipev's FB steps, and the errors. */
#include "harness.h"
#include "sched/sched.h"
#include "sched_fixture.h"
#include "sim/eng.h"
#include "sim/mem.h"

#include <string.h>

#define MAXS 16

static sched_stage stages[MAXS];

/* Every stage: F f, B b (input gradient), W w; act bytes of activations,
 * of which W needs a quarter. */
static void costs(double f, double b, double w, double act)
{
    for (int i = 0; i < MAXS; i++)
        stages[i] = (sched_stage){f, b, f, act, act, 0, w, act / 4};
}

static void test_parse(void)
{
    sched_action a = act("FB3/1", 4, 1);
    CHECK_INT(a.kind, SCHED_FB);
    CHECK_INT(a.mb, 3);
    CHECK_INT(a.bmb, 1);
    CHECK_INT(a.chunk, 0);
    CHECK_INT(a.bchunk, 0);
    a = act("FB12.c1/10", 16, 2);
    CHECK_INT(a.mb, 12);
    CHECK_INT(a.chunk, 1);
    CHECK_INT(a.bmb, 10);
    CHECK_INT(a.bchunk, 0);
    a = act("FB0/1.c1", 4, 2);
    CHECK_INT(a.bchunk, 1);
    CHECK_INT(a.bmb, 1);
    /* F and B still parse as before */
    CHECK_INT(act("F3", 4, 1).kind, PROG_F);
    CHECK_INT(act("B0.c1", 4, 2).kind, PROG_B);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"FB3", "bad action 'FB3': expected '/' and the backward's "
                "microbatch, as in FB3/1"},
        {"FB3/", "bad action 'FB3/': expected a microbatch after /"},
        {"FB/1", "bad action 'FB/1': expected a microbatch after B"},
        {"FB3/9", "action 'FB3/9': microbatch 9 out of range 0..3"},
        {"FB3/1.c2", "action 'FB3/1.c2': chunk 2 out of range 0..0"},
        {"FB3/1x", "bad action 'FB3/1x': unexpected 'x'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ps_err err;
        sched_action b;
        CHECK_INT(sched_parse_action(bad[i].text, 4, 1, &b, &err), PS_ERR);
        CHECK_STR(err.msg, bad[i].msg);
    }
}

/* One rank: F0, then FB1/0 (forward of 1 with the backward of 0), B1. */
static sched_spec one_rank(const sched_action **lists, int32_t *n)
{
    static sched_action l[3];
    l[0] = act("F0", 2, 1);
    l[1] = act("FB1/0", 2, 1);
    l[2] = act("B1", 2, 1);
    lists[0] = l;
    n[0] = 3;
    return custom_on(1, 1, 2, stages, lists, n);
}

/* The FB's two ops on lane 0: FB_F then FB_B. */
static void fb_ops(const prog_set *ps, const prog_op **f, const prog_op **b)
{
    *f = *b = NULL;
    for (int32_t i = 0; i < ps->lanes[0].n; i++) {
        const prog_op *op = &ps->lanes[0].ops[i];
        if (op->type == PROG_COMPUTE && op->kind == PROG_FB_F)
            *f = op;
        if (op->type == PROG_COMPUTE && op->kind == PROG_FB_B)
            *b = op;
    }
}

static void test_duration_and_memory(void)
{
    const sched_action *lists[1];
    int32_t n[1];
    costs(1, 3, 0, 8); /* F 1, full B 3 (no W: B is the whole backward) */
    sched_spec s = one_rank(lists, n);
    /* default: nothing hidden, F + B (PyTorch's runtime without an overlap
     * function) */
    outcome o = run_free(&s, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    const prog_op *f, *b;
    fb_ops(o.ps, &f, &b);
    CHECK(f && b);
    if (f && b) {
        CHECK_NEAR(b->t_end - f->t_start, 4);
        CHECK_NEAR(f->t_end - f->t_start, 1); /* the forward's share */
        CHECK_INT(f->mb, 1);
        CHECK_INT(b->mb, 0);
    }
    CHECK_NEAR(o.res.makespan, 1 + 4 + 3);
    /* memory of both: F0's 8 bytes held, FB allocates F1's 8 at its
     * start and frees B0's 8 at its end: peak 16 */
    mem_rank mr[1];
    ps_err err;
    CHECK_INT(mem_ledger(o.ps, NULL, mr, NULL, NULL, &err), 0);
    CHECK_NEAR(mr[0].peak, 16);
    CHECK_NEAR(mr[0].final, 0);
    prog_free(o.ps);

    /* fb_interference 0: the shorter action hides entirely, max(F, B) */
    s.fb_given = 1;
    s.fb_interference = 0;
    o = run_free(&s, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    CHECK_NEAR(o.res.makespan, 1 + 3 + 3);
    prog_free(o.ps);
    /* 0.5: max + min / 2 */
    s.fb_interference = 0.5;
    o = run_free(&s, ENG_RENDEZVOUS);
    CHECK_NEAR(o.res.makespan, 1 + 3.5 + 3);
    prog_free(o.ps);
    /* overlap_fb: a measured time wins */
    s.overlap_fb = 2.5;
    o = run_free(&s, ENG_RENDEZVOUS);
    CHECK_NEAR(o.res.makespan, 1 + 2.5 + 3);
    fb_ops(o.ps, &f, &b);
    if (f && b) /* split as F : B = 1 : 3 */
        CHECK_NEAR(f->t_end - f->t_start, 2.5 / 4);
    prog_free(o.ps);
    CHECK_NEAR(sched_fb_time(&s, 1, 3), 2.5);
}

/* p = 2: rank 0 F0 F1 FB2/0 B1 B2, rank 1 F0 FB1/0 FB2/1 B2 (F 1, full
 * B 2, FB their sum): an FB
 * receives two tensors and sends two, and the run completes under
 * rendezvous with Megatron's paired lowering and with pytorch p2p. */
static void test_two_ranks(void)
{
    static const char *r0[] = {"F0", "F1", "FB2/0", "B1", "B2"};
    static const char *r1[] = {"F0", "FB1/0", "FB2/1", "B2"};
    sched_action l0[5], l1[4];
    for (int i = 0; i < 5; i++)
        l0[i] = act(r0[i], 3, 1);
    for (int i = 0; i < 4; i++)
        l1[i] = act(r1[i], 3, 1);
    const sched_action *lists[2] = {l0, l1};
    int32_t n[2] = {5, 4};
    costs(1, 1, 1, 1);
    for (int py = 0; py < 2; py++) {
        sched_spec s = custom_on(2, 1, 3, stages, lists, n);
        s.pytorch_p2p = py;
        outcome o = run_free(&s, ENG_RENDEZVOUS);
        CHECK_INT(o.rc, 0);
        int sends = 0, recvs = 0;
        for (int32_t i = 0; i < o.ps->lanes[1].n; i++) {
            sends += o.ps->lanes[1].ops[i].type == PROG_SEND;
            recvs += o.ps->lanes[1].ops[i].type == PROG_RECV;
        }
        CHECK_INT(sends, 3); /* B0, B1, B2's gradients */
        CHECK_INT(recvs, 3); /* F0, F1, F2's activations */
        /* F0 1, FB1/0 2..5 on rank 1, FB2/0 5..8, FB2/1 8..11, B1 and
         * B2 (full, 2 each) 11..13, B2 on rank 0 13..15 */
        CHECK_NEAR(o.res.makespan, 15);
        prog_free(o.ps);
    }
}

/* dualpipev's overlapped steps are FB actions; with the default timing
 * it runs as before (F then B), with fb_interference 0 faster. */
static void test_dualpipev(void)
{
    costs(1, 1, 1, 1);
    sched_spec s = spec_on(SCHED_DUALPIPEV, 4, 2, 8, stages, SCHED_V);
    CHECK(sched_overlaps(&s));
    sched_action a[64];
    int32_t n = 0, fb = 0;
    ps_err err;
    CHECK_INT(sched_order(&s, 0, a, 64, &n, &err), 0);
    for (int32_t i = 0; i < n; i++)
        fb += a[i].kind == SCHED_FB;
    /* rank 0: steps 4 and 5 overlap 2 (m - 2p + 1) + (p - 1) times */
    CHECK_INT(fb, 2 * (8 - 8 + 1) + 3);
    outcome o = run_free(&s, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    double plain = o.res.makespan;
    prog_free(o.ps);
    s.fb_given = 1;
    s.fb_interference = 0;
    o = run_free(&s, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    CHECK(o.res.makespan < plain - 0.5);
    prog_free(o.ps);
}

static void test_errors(void)
{
    ps_err err;
    costs(1, 1, 1, 1);
    /* FB timing on a schedule without FB actions */
    sched_spec s = spec_on(SCHED_1F1B, 2, 1, 4, stages, SCHED_LOOP);
    s.fb_given = 1;
    s.overlap_fb = 1;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "overlap_fb / fb_interference: the 1f1b schedule has "
                       "no overlapped FB actions to time (dualpipev and "
                       "custom lists with FB have)");
    s.kind = SCHED_DUALPIPEV;
    s.placement = SCHED_V;
    s.v = 2;
    s.fb_interference = 1.5;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "fb_interference must be in 0..1 (got 1.5)");
    /* custom lists */
    static const struct {
        const char *acts[4];
        const char *msg;
    } bad[] = {
        {{"F0", "FB1/1", "B0", "F1"},
         "rank 0: FB1/1 overlaps the forward and the backward of one "
         "microbatch, which cannot run at once"},
        {{"FB0/1", "F1", "B0", "B1"}, "rank 0: FB0/1 comes before F1"},
        {{"F0", "F1", "FB1/0", "B1"}, "rank 0: FB1/0 repeats F1"},
        {{"F0", "B0", "F1", "FB0/1"}, "rank 0: FB0/1 repeats F0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sched_action l[4];
        for (int k = 0; k < 4; k++)
            l[k] = act(bad[i].acts[k], 2, 1);
        const sched_action *lists[1] = {l};
        int32_t n[1] = {4};
        sched_spec c = custom_on(1, 1, 2, stages, lists, n);
        CHECK_INT(sched_check(&c, &err), PS_ERR);
        CHECK_STR(err.msg, bad[i].msg);
    }
}

int main(void)
{
    test_parse();
    test_duration_and_memory();
    test_two_ranks();
    test_dualpipev();
    test_errors();
    return harness_done();
}
