/* The dp pass (par/dp.c): the bucket plan (reverse layer order, a smaller
 * first bucket, the fraction of the last backward at which each is ready),
 * the split of the last backward, the lanes and signals added, the
 * optimizer step, ZeRO-1's division of it, the finalize reduction a tied
 * embedding asks for, and the exposed time. Expected values are worked out
 * by hand in the comments. */
#include <math.h>
#include <stdlib.h>

#include "coll/coll.h"
#include "dp_fixture.h"
#include "harness.h"
#include "net/net.h"
#include "par/dp.h"
#include "par/pass.h"
#include "sim/prog.h"

/* One stage of two layers: layer 0 has 100 parameters, layer 1 has 300, 2
 * gradient bytes each, 1 s of backward each. Walked last layer first with a
 * 100-byte first bucket and 400-byte buckets:
 *   layer 1 (600 B over [0, 1] s of the backward):
 *     bucket 0: 100 B, ready at 100/600 of layer 1 -> (1/6)/2 = 1/12
 *     bucket 1: 400 B, ready at 500/600 of layer 1 -> (5/6)/2 = 5/12
 *     100 B carried over
 *   layer 0 (200 B): bucket 2: 100 + 200 = 300 B, ready at the end (1).
 * With the backward 2 s long, the pieces are 1/6, 2/3 and 7/6 s
 * (dp_fixture.h's stage). */

/* d replicas of one stage (pp = 1). */
static par_step config(int32_t d, int overlap, int zero)
{
    par_sizes sz;
    par_sizes_init(&sz);
    sz.dp = d;
    sz.shard = zero ? PAR_SHARD_OPTIMIZER : PAR_SHARD_NONE;
    par_step c = base_step(&sz, 1);
    c.dp.overlap = overlap;
    c.dp.optimizer_seconds = 0.5;
    return c;
}

/* The dp pass's lower on ps. */
static int dp_lower(par_step *c, prog_set *ps, const net *nw, ps_err *err)
{
    c->ps = ps;
    c->nw = nw;
    return par_dp_pass.lower(c, err);
}

/* d replicas of F (1 s, +8 B) then B (2 s, -8 B) on stage 0. */
static prog_set *replicas(int32_t d)
{
    prog_set *ps = prog_new(d);
    for (int32_t j = 0; j < d; j++) {
        int32_t l = prog_add_lane(ps, j);
        prog_op f = prog_compute(PROG_F, 0, 0, 0, 1, 8);
        prog_op b = prog_compute(PROG_B, 0, 0, 0, 2, -8);
        CHECK_INT(prog_push(ps, l, &f), PS_OK);
        CHECK_INT(prog_push(ps, l, &b), PS_OK);
    }
    return ps;
}

static net *mesh(int32_t n)
{
    ps_err err;
    net *nw = net_new(n);
    CHECK_INT(net_set_mesh(nw, 1e9, 1e-6, &err), PS_OK);
    CHECK_INT(net_finalize(nw, &err), PS_OK);
    return nw;
}

/* One replica (no data-parallel peers) of two stages whose ranks share a
 * tied embedding: the finalize reduction gets communication lanes on both
 * ranks that wait for their backward (signals raised at its end), run a
 * 2-rank all-reduce of shared x grad_bytes, then raise synced, which the
 * compute lanes wait for before OPT. */
static void test_finalize(const net *nw)
{
    ps_err err;
    par_sizes sz;
    par_sizes_init(&sz);
    sz.pp = 2;
    static const int32_t f2[2] = {0, 1}, c2[2] = {1, 1};
    static const double sp2[2] = {100, 300};
    par_step c = base_step(&sz, 2);
    c.first = f2;
    c.count = c2;
    c.stage_params = sp2;
    c.grad_bytes = 4;
    c.dp.bucket_bytes = 1e6; /* one bucket per rank: one ready signal */
    c.dp.first_bucket_bytes = 1e6;
    c.dp.overlap = 1;
    c.finalize[0] = (par_finalize){0, 1, 1000 * 4};
    c.nfinalize = 1;
    par_log log = {0};
    c.log = &log;
    prog_set *ps = prog_new(2);
    for (int32_t r = 0; r < 2; r++) {
        int32_t l = prog_add_lane(ps, r);
        prog_op b = prog_compute(PROG_B, r, 0, 0, 2, -8);
        CHECK_INT(prog_push(ps, l, &b), PS_OK);
    }
    CHECK_INT(par_dp_pass.arrays(&c), 1);
    CHECK_INT(dp_lower(&c, ps, nw, &err), PS_OK);
    CHECK_INT(ps->nlanes >= 4, 1); /* 2 compute + 2 communication lanes */
    /* compute lane: B, SIGNAL(ready), WAIT(synced), OPT */
    const prog_lane *l0 = &ps->lanes[0];
    CHECK_INT(l0->n, 4);
    CHECK_INT(l0->ops[1].type, PROG_SIGNAL);
    CHECK_INT(l0->ops[2].type, PROG_WAIT);
    CHECK_INT(l0->ops[3].kind, PROG_OPT);
    /* communication lane: WAIT(ready) first, SIGNAL(synced) last */
    const prog_lane *cl = &ps->lanes[2];
    CHECK_INT(cl->ops[0].type, PROG_WAIT);
    CHECK_INT(cl->ops[0].msg, l0->ops[1].msg);
    CHECK_INT(cl->ops[cl->n - 1].type, PROG_SIGNAL);
    CHECK_INT(cl->ops[cl->n - 1].msg, l0->ops[2].msg);
    CHECK_INT(log.n, 1);
    if (log.n == 1) {
        CHECK_INT(log.c[0].op, COLL_ALLREDUCE);
        CHECK_INT(log.c[0].d, 2);
        CHECK(log.c[0].bytes == 4000);
    }
    CHECK_INT(prog_seal(ps, &err), PS_OK);
    par_log_free(&log);
    prog_free(ps);
    /* the same ranks, one each: nothing to reduce */
    c.finalize[0].r1 = 0;
    CHECK_INT(par_dp_pass.arrays(&c), 0);
}

/* The distributed optimizer's padding (Megatron-Core 0.20,
 * optimizer/param_layout.py pad_bucket_end): a bucket of 400 + 600 = 1000
 * parameters (one bucket: bucket_bytes past the model) over dp 3 is padded
 * to a multiple of lcm(3, 128) = 384 elements, 3 x 384 = 1152; at 2 bytes
 * a gradient and a weight the reduce-scatter and the all-gather move
 * 2304 bytes, and each ring rank sends 2/3 of each, 1536 + 1536. Without
 * the distributed optimizer the all-reduce moves the 2000 bytes as they
 * are. The static memory holds the 152 padded elements in the gradient
 * and parameter buffers (2 + 2 bytes each), not in the optimizer's shard:
 * 1000 x (2 + 2 + 12 / 3) + 152 x 4 = 8608 bytes a rank; without the
 * distributed optimizer 1000 x 16 = 16000. */
static void test_padding(void)
{
    ps_err err;
    net *nw3 = mesh(3);
    static const double lp[2] = {400, 600}, sp[1] = {1000};
    for (int zero = 0; zero <= 1; zero++) {
        par_step c = config(3, 1, zero);
        c.layer_params = lp;
        c.stage_params = sp;
        c.dp.bucket_bytes = c.dp.first_bucket_bytes = 1e9;
        par_log log = {0};
        c.log = &log;
        prog_set *ps = replicas(3);
        CHECK_INT(dp_lower(&c, ps, nw3, &err), PS_OK);
        CHECK_INT(log.n, zero ? 2 : 1);
        for (int32_t k = 0; k < log.n; k++) {
            CHECK_INT(log.c[k].op,
                      zero ? (k ? COLL_ALLGATHER : COLL_REDUCE_SCATTER)
                           : COLL_ALLREDUCE);
            CHECK(log.c[k].bytes == (zero ? 1152 * 2 : 1000 * 2));
        }
        double sent = 0;
        for (int32_t l = 0; l < ps->nlanes; l++)
            for (int32_t i = 0; i < ps->lanes[l].n; i++)
                if (ps->lanes[l].ops[i].type == PROG_SEND)
                    sent += ps->lanes[l].ops[i].bytes;
        /* all-reduce: 2 x 2/3 x 2000 per rank */
        CHECK_NEAR(sent / 3, zero ? 1536 + 1536 : 2 * 2000 * 2.0 / 3);
        double rank_static[3] = {0, 0, 0};
        par_dp_pass.memory(&c, rank_static);
        for (int32_t k = 0; k < 3; k++)
            CHECK_NEAR(rank_static[k], zero ? 8608 : 16000);
        CHECK_INT(prog_seal(ps, &err), PS_OK);
        par_log_free(&log);
        prog_free(ps);
    }
    net_free(nw3);
    /* par_dp_pad_elements (ps.search's closed form through core.dp_pad),
     * the same rule: the chunk of 1000 as one bucket over dp 3, 152; over
     * dp 8, lcm(8, 128) = 128: 1024 - 1000 = 24. Cut at 1000 bytes and
     * then 600 (2 bytes a gradient): buckets of 500, 300 and 200
     * elements, each to a multiple of 128: 12 + 84 + 56. No padding at a
     * multiple, and none of nothing. */
    CHECK(par_dp_pad_elements(1000, 3, 0, 2, 1, 1) == 152);
    CHECK(par_dp_pad_elements(1000, 8, 0, 2, 1, 1) == 24);
    CHECK(par_dp_pad_elements(1000, 8, 1, 2, 1000, 600) == 12 + 84 + 56);
    CHECK(par_dp_pad_elements(1000, 8, 1, 2, 1e9, 1e9) == 24);
    CHECK(par_dp_pad_elements(1024, 256, 1, 4, 1024, 1024) == 0);
    CHECK(par_dp_pad_elements(0, 3, 1, 2, 1000, 600) == 0);
}

int main(void)
{
    ps_err err;
    net *nw = mesh(2);

    /* overlap: F, B(1/6), SIG, B(2/3), SIG, B(7/6), SIG, WAIT, OPT */
    par_step c = config(2, 1, 0);
    prog_set *ps = replicas(2);
    CHECK_INT(dp_lower(&c, ps, nw, &err), PS_OK);
    CHECK_INT(ps->nlanes, 4); /* 2 compute + 2 communication lanes */
    const prog_lane *l0 = &ps->lanes[0];
    CHECK_INT(l0->n, 9);
    if (l0->n == 9) {
        const int want_type[9] = {PROG_COMPUTE, PROG_COMPUTE, PROG_SIGNAL,
                                  PROG_COMPUTE, PROG_SIGNAL,  PROG_COMPUTE,
                                  PROG_SIGNAL,  PROG_WAIT,    PROG_COMPUTE};
        for (int i = 0; i < 9; i++)
            CHECK_INT(l0->ops[i].type, want_type[i]);
        CHECK_NEAR(l0->ops[1].seconds, 2.0 / 12);
        CHECK_NEAR(l0->ops[3].seconds, 2.0 * 4 / 12);
        CHECK_NEAR(l0->ops[5].seconds, 2.0 * 7 / 12);
        /* activations are freed when the whole backward ends */
        CHECK(l0->ops[1].mem == 0 && l0->ops[3].mem == 0);
        CHECK(l0->ops[5].mem == -8);
        CHECK_INT(l0->ops[8].kind, PROG_OPT);
        CHECK(l0->ops[8].seconds == 0.5);
        /* replica 0's ready signals are 0, 1, 2; synced is 3 */
        CHECK_INT(l0->ops[2].msg, 0);
        CHECK_INT(l0->ops[4].msg, 1);
        CHECK_INT(l0->ops[6].msg, 2);
        CHECK_INT(l0->ops[7].msg, 3);
    }
    /* replica 1 uses signals 5..8 (5 per replica: 3 ready, synced, updated) */
    CHECK_INT(ps->nsignals, 10);
    CHECK_INT(ps->lanes[1].ops[2].msg, 5);
    /* communication lane of replica 0: WAIT(ready 0) first, SIGNAL(synced)
     * last, and every transfer tagged with its bucket */
    const prog_lane *cl = &ps->lanes[2];
    CHECK_INT(cl->rank, 0);
    CHECK_INT(ps->lanes[3].rank, 1);
    CHECK_INT(cl->ops[0].type, PROG_WAIT);
    CHECK_INT(cl->ops[0].msg, 0);
    CHECK_INT(cl->ops[cl->n - 1].type, PROG_SIGNAL);
    CHECK_INT(cl->ops[cl->n - 1].msg, 3);
    int waits = 0, sends = 0, badtag = 0, bucket = -1;
    for (int32_t i = 0; i < cl->n; i++) {
        if (cl->ops[i].type == PROG_WAIT)
            bucket = waits++;
        if (cl->ops[i].type == PROG_SEND) {
            sends++;
            badtag += cl->ops[i].tag != bucket;
        }
    }
    CHECK_INT(waits, 3);
    CHECK(sends >= 3);
    CHECK_INT(badtag, 0);
    CHECK_INT(prog_seal(ps, &err), PS_OK);

    /* exposed: OPT start minus WAIT(synced) start, set by hand */
    double exposed[2] = {NAN, NAN};
    ps->lanes[0].ops[7].t_start = 5;
    ps->lanes[0].ops[8].t_start = 7.5;
    ps->lanes[1].ops[7].t_start = 6;
    ps->lanes[1].ops[8].t_start = 6;
    par_dp_pass.exposed(&c, exposed);
    CHECK(exposed[0] == 2.5);
    CHECK(exposed[1] == 0);
    prog_free(ps);

    /* no overlap: F, B (whole), SIG x3, WAIT, OPT */
    c = config(2, 0, 0);
    ps = replicas(2);
    CHECK_INT(dp_lower(&c, ps, nw, &err), PS_OK);
    CHECK_INT(ps->lanes[0].n, 7);
    CHECK(ps->lanes[0].ops[1].seconds == 2);
    CHECK_INT(ps->lanes[0].ops[2].type, PROG_SIGNAL);
    CHECK_INT(ps->lanes[0].ops[5].type, PROG_WAIT);
    CHECK_INT(ps->lanes[0].ops[6].kind, PROG_OPT);
    prog_free(ps);

    /* ZeRO-1: the optimizer updates 1/d of the parameters, then
     * SIGNAL(updated) ends the lane */
    c = config(2, 1, 1);
    ps = replicas(2);
    CHECK_INT(dp_lower(&c, ps, nw, &err), PS_OK);
    const prog_lane *z = &ps->lanes[0];
    CHECK_INT(z->n, 10);
    CHECK_INT(z->ops[8].kind, PROG_OPT);
    CHECK(z->ops[8].seconds == 0.25);
    CHECK_INT(z->ops[9].type, PROG_SIGNAL);
    CHECK_INT(z->ops[9].msg, 4);
    prog_free(ps);

    /* one replica: no sync, the OPT appended alone */
    c = config(1, 1, 0);
    ps = replicas(1);
    CHECK_INT(dp_lower(&c, ps, nw, &err), PS_OK);
    CHECK_INT(ps->nlanes, 1);
    CHECK_INT(ps->lanes[0].n, 3);
    CHECK_INT(ps->lanes[0].ops[1].type, PROG_COMPUTE);
    CHECK(ps->lanes[0].ops[1].seconds == 2);
    CHECK_INT(ps->lanes[0].ops[2].kind, PROG_OPT);
    prog_free(ps);

    /* bad settings fail, named */
    c = config(2, 1, 0);
    c.dp.bucket_bytes = 0;
    ps = replicas(2);
    CHECK_INT(dp_lower(&c, ps, nw, &err), PS_ERR);
    CHECK_HAS(err.msg, "bucket sizes must be positive");
    prog_free(ps);
    c = config(2, 1, 0);
    ps = replicas(1);
    CHECK_INT(dp_lower(&c, ps, nw, &err), PS_ERR);
    CHECK_HAS(err.msg, "expected 2 compute lanes, found 1");
    prog_free(ps);

    test_finalize(nw);
    test_padding();
    net_free(nw);
    par_sim_free(&sim);
    return harness_done();
}
