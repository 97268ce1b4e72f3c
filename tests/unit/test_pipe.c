/* pipe_run end to end without a database: on uniform stages over free
 * links the simulated bubble (the mean over ranks) equals the closed form
 * pipe computes, for the schedules that have one, DeepSeek's DualPipe and
 * DualPipeV included; where no form holds it is NAN. */
#include "step/pipe.h"

#include <math.h>
#include <stdlib.h>

#include "harness.h"

#define MAXL 64

typedef struct setup {
    pipe_layer layers[MAXL];
    int32_t partition[MAXL];
    double rate[MAXL];
    pipe_config cfg;
    net *nw;
} setup;

/* kind on p ranks, v chunks, m microbatches, one layer a stage of F f,
 * B b (input gradient) and W w seconds, nothing sent between stages. */
static void make(setup *s, enum sched_kind kind, int p, int v, int m, double f,
                 double b, double w)
{
    pipe_config_init(&s->cfg);
    int n = p * v;
    for (int i = 0; i < n; i++) {
        pipe_layer_init(&s->layers[i]);
        s->layers[i].fwd_time = f;
        s->layers[i].bwd_input_time = b;
        s->layers[i].bwd_weight_time = w;
        s->partition[i] = 1;
    }
    for (int r = 0; r < MAXL; r++)
        s->rate[r] = 1e12;
    s->cfg.schedule = kind;
    s->cfg.schedule_name = "test";
    s->cfg.p = p;
    s->cfg.v = v;
    s->cfg.m = m;
    s->cfg.placement = sched_default_placement(kind);
    s->cfg.layers = s->layers;
    s->cfg.nlayers = n;
    s->cfg.partition = s->partition;
    s->cfg.device_rate = s->rate;
    s->cfg.record = REC_SUMMARY;
    ps_err err;
    s->nw = net_new(p);
    CHECK_INT(net_set_mesh(s->nw, 1e30, 0, &err), 0);
    CHECK_INT(net_finalize(s->nw, &err), 0);
}

/* Runs s; the result's bubble and closed form through *bubble, *form. */
static void run(pipe_ctx *ctx, setup *s, double *bubble, double *form)
{
    pipe_result res;
    ps_err err;
    int rc = pipe_run(ctx, &s->cfg, s->nw, NULL, &res, &err);
    CHECK_INT(rc, 0);
    if (rc)
        printf("  %s\n", err.msg);
    *bubble = res.bubble;
    *form = res.closed_form_bubble;
    net_free(s->nw);
    s->nw = NULL;
}

/* pipe_layer_init's layer reads as a layer table that sets nothing: with
 * only a forward time its backward is the usual twice the forward. */
static void test_layer_init(pipe_ctx *ctx)
{
    setup s;
    double bubble, form;
    make(&s, SCHED_1F1B, 1, 1, 1, 1, 1, 1);
    pipe_layer_init(&s.layers[0]);
    s.layers[0].fwd_time = 0.25;
    pipe_result res;
    ps_err err;
    CHECK_INT(pipe_run(ctx, &s.cfg, s.nw, NULL, &res, &err), 0);
    CHECK_NEAR(res.makespan, 0.75);
    run(ctx, &s, &bubble, &form);
}

/* The existing forms through pipe_run, as the fixture's check. */
static void test_megatron_forms(pipe_ctx *ctx)
{
    setup s;
    double bubble, form;
    make(&s, SCHED_1F1B, 4, 1, 8, 1, 1, 1);
    run(ctx, &s, &bubble, &form);
    CHECK_NEAR(form, 3.0 / 11);
    CHECK_NEAR(bubble, form);
    make(&s, SCHED_INTERLEAVED, 4, 2, 8, 1, 1, 1);
    run(ctx, &s, &bubble, &form);
    CHECK_NEAR(form, 3.0 / 19);
    CHECK_NEAR(bubble, form);
}

/* DeepSeek-V3 report, section 3.2.1, Table 2 (the DualPipe README repeats
 * it): DualPipe's bubble (PP/2 - 1)(F&B + B - 3W); DualPipeV, DualPipe cut
 * in half, (PP/2 - 1)(F&B + B - 3W) with PP = 2p stages on p ranks.
 * pipe_closed_form_dual's fraction over m (f + b + w) (DualPipe) or
 * 2m (f + b + w) (DualPipeV) of busy time per rank; DualPipe takes even
 * m >= 2p, DualPipeV any m >= 2p. */
static void test_dual_forms(pipe_ctx *ctx)
{
    for (int k = 0; k < 2; k++) {
        enum sched_kind kind = k ? SCHED_DUALPIPEV : SCHED_DUALPIPE;
        int v = k ? 2 : 1;
        for (int p = 2; p <= 8; p += 2)
            for (int m = 2 * p; m <= 2 * p + 6; m += 2 - k) {
                setup s;
                double bubble, form;
                make(&s, kind, p, v, m, 0.5, 0.5, 0.5);
                run(ctx, &s, &bubble, &form);
                /* f = b = w: idle (p/2 - 1) 2f, resp. (p - 1) 2f */
                double idle = k ? (p - 1) * 1.0 : (p / 2.0 - 1) * 1.0;
                double busy = (k ? 2 : 1) * m * 1.5;
                CHECK_NEAR(form, idle / (busy + idle));
                CHECK_NEAR(bubble, form);
                CHECK_NEAR(pipe_closed_form_dual(kind, p, m, 0.5, 0.5, 0.5),
                           form);
            }
    }
}

/* Where the form does not hold it is NAN, not wrong: unequal parts (the
 * table's form is then only an upper bound on the worst rank), an F&B
 * that hides time (ranks then differ in busy time), checkpointing. */
static void test_dual_nan(pipe_ctx *ctx)
{
    CHECK(isnan(pipe_closed_form_dual(SCHED_DUALPIPE, 4, 8, 1, 1.5, 0.5)));
    CHECK(isnan(pipe_closed_form_dual(SCHED_DUALPIPE, 4, 6, 1, 1, 1)));
    CHECK(isnan(pipe_closed_form_dual(SCHED_DUALPIPEV, 4, 6, 1, 1, 1)));
    CHECK(isnan(pipe_closed_form_dual(SCHED_1F1B, 4, 8, 1, 1, 1)));
    setup s;
    double bubble, form;
    make(&s, SCHED_DUALPIPE, 4, 1, 8, 1, 1, 1);
    s.cfg.fb_given = 1; /* F&B = max(F, B) */
    s.cfg.fb_interference = 0;
    run(ctx, &s, &bubble, &form);
    CHECK(isnan(form));
    make(&s, SCHED_DUALPIPEV, 4, 2, 8, 1, 1, 1);
    s.cfg.checkpoint = 1;
    run(ctx, &s, &bubble, &form);
    CHECK(isnan(form));
}

int main(void)
{
    pipe_ctx *ctx = pipe_ctx_new();
    test_layer_init(ctx);
    test_megatron_forms(ctx);
    test_dual_forms(ctx);
    test_dual_nan(ctx);
    pipe_ctx_free(ctx);
    return harness_done();
}
