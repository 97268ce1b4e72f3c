/* ZeRO-2 and ZeRO-3 in the dp pass (par/fsdp.c, par/fsdp_lane.c): the
 * bytes each rank sends per step against the closed forms (ring, no
 * protocol: a ring all-gather or reduce-scatter of T bytes sends (N - 1)
 * T / N per rank, an all-reduce twice that; ZeRO-3 moves 1.5x DDP's
 * volume per microbatch, ZeRO paper section 7.2.2), hybrid sharding's
 * groups, the reshard group, the lane of a ZeRO-3 rank op by op, and the
 * static bytes per parameter of each stage. */
#include <math.h>
#include <stdlib.h>

#include "coll/coll.h"
#include "dp_fixture.h"
#include "harness.h"
#include "net/net.h"
#include "par/dp.h"
#include "par/pass.h"
#include "sim/prog.h"

/* d replicas of one stage (dp_fixture.h: 800 bytes of the model) at
 * ZeRO stage `zero`, shard group `group` (0: all), reshard `reshard`. */
static par_step config(int32_t d, int zero, int32_t group, int32_t reshard)
{
    par_sizes sz;
    par_sizes_init(&sz);
    sz.dp = d;
    sz.shard = zero;
    sz.shard_group = group;
    par_step c = base_step(&sz, 1);
    c.dp.overlap = 1;
    c.dp.reshard = reshard;
    return c;
}

/* d replicas of m microbatches: F (1 s, +8 B) then B (2 s, -8 B) each. */
static prog_set *replicas(int32_t d, int32_t m)
{
    prog_set *ps = prog_new(d);
    for (int32_t j = 0; j < d; j++) {
        int32_t l = prog_add_lane(ps, j);
        for (int32_t mb = 0; mb < m; mb++) {
            prog_op f = prog_compute(PROG_F, 0, 0, mb, 1, 8);
            prog_op b = prog_compute(PROG_B, 0, 0, mb, 2, -8);
            CHECK_INT(prog_push(ps, l, &f), PS_OK);
            CHECK_INT(prog_push(ps, l, &b), PS_OK);
        }
    }
    return ps;
}

/* Bytes every rank sends, per rank (all lanes' SENDs over d). */
static double sent_per_rank(const prog_set *ps, int32_t d)
{
    double sum = 0;
    for (int32_t l = 0; l < ps->nlanes; l++)
        for (int32_t i = 0; i < ps->lanes[l].n; i++)
            if (ps->lanes[l].ops[i].type == PROG_SEND)
                sum += ps->lanes[l].ops[i].bytes;
    return sum / d;
}

/* The lowered step's bytes per rank, and its collectives in log. */
static double volume(const net *nw, int32_t d, int32_t m, int zero,
                     int32_t group, int32_t reshard, par_log *log)
{
    ps_err err;
    par_step c = config(d, zero, group, reshard);
    c.log = log;
    prog_set *ps = replicas(d, m);
    c.ps = ps;
    c.nw = nw;
    CHECK_INT(par_dp_pass.lower(&c, &err), PS_OK);
    CHECK_INT(prog_seal(ps, &err), PS_OK);
    double v = sent_per_rank(ps, d);
    prog_free(ps);
    return v;
}

/* How many logged collectives have op and d ranks. */
static int count_op(const par_log *log, int op, int32_t d)
{
    int n = 0;
    for (int32_t k = 0; k < log->n; k++)
        n += log->c[k].op == op && log->c[k].d == d;
    return n;
}

static void test_volumes(const net *nw)
{
    par_log log = {0};
    /* N = 4, 800 bytes: DDP all-reduces 2 x 3/4 x 800 = 1200 per rank,
     * once per step whatever m */
    double ddp = volume(nw, 4, 1, PAR_SHARD_NONE, 0, 0, NULL);
    CHECK_NEAR(ddp, 1200);
    CHECK_NEAR(volume(nw, 4, 2, PAR_SHARD_NONE, 0, 0, NULL), 1200);
    /* ZeRO-1: reduce-scatter + all-gather of the buckets padded as
     * Megatron's distributed optimizer pads them (par/dp_lane.c
     * bucket_pad): 50, 200 and 150 elements to multiples of
     * lcm(4, 128) = 128, 128 + 256 + 256 = 640 elements, 1280 bytes, so
     * 960 + 960 */
    CHECK_NEAR(volume(nw, 4, 2, PAR_SHARD_OPTIMIZER, 0, 0, NULL), 1920);
    /* ZeRO-2: a reduce-scatter per microbatch, the all-gather once */
    CHECK_NEAR(volume(nw, 4, 1, PAR_SHARD_GRADS, 0, 0, NULL), 1200);
    CHECK_NEAR(volume(nw, 4, 2, PAR_SHARD_GRADS, 0, 0, NULL), 600 * 3);
    /* ZeRO-3: all-gather before the forward and the backward, and a
     * reduce-scatter, per microbatch: 3 x 600 = 1.5x DDP at m = 1 */
    par_log_clear(&log);
    double z3 = volume(nw, 4, 1, PAR_SHARD_PARAMS, 0, 0, &log);
    CHECK_NEAR(z3, 1800);
    CHECK_NEAR(z3 / ddp, 1.5);
    /* one unit per layer: 2 gathers before the forward, 2 before the
     * backward, 2 reduce-scatters, all over the 4 ranks */
    CHECK_INT(log.n, 6);
    CHECK_INT(count_op(&log, COLL_ALLGATHER, 4), 4);
    CHECK_INT(count_op(&log, COLL_REDUCE_SCATTER, 4), 2);
    CHECK_NEAR(volume(nw, 4, 2, PAR_SHARD_PARAMS, 0, 0, NULL), 3600);
    /* reshard_after_forward false (1): no gather before the backward;
     * an int of 2: that gather within pairs, 1/2 x 800 */
    CHECK_NEAR(volume(nw, 4, 1, PAR_SHARD_PARAMS, 0, 1, NULL), 1200);
    par_log_clear(&log);
    CHECK_NEAR(volume(nw, 4, 1, PAR_SHARD_PARAMS, 0, 2, &log), 1600);
    CHECK_INT(count_op(&log, COLL_ALLGATHER, 4), 2);
    CHECK_INT(count_op(&log, COLL_ALLGATHER, 2), 4); /* 2 units x 2 pairs */
    /* hybrid sharding, shard groups of 2 out of 4: gathers and
     * reduce-scatters within each pair (1/2 x 800 each), then the
     * all-reduce of each shard's 400 bytes across the 2 pairs (1/2 x 2 x
     * 400): 400 + 400 + 400 + 400 */
    par_log_clear(&log);
    CHECK_NEAR(volume(nw, 4, 1, PAR_SHARD_PARAMS, 2, 0, &log), 1600);
    CHECK_INT(count_op(&log, COLL_ALLGATHER, 2), 8);
    CHECK_INT(count_op(&log, COLL_REDUCE_SCATTER, 2), 4);
    CHECK_INT(count_op(&log, COLL_ALLREDUCE, 2), 4);
    CHECK_INT(count_op(&log, COLL_ALLGATHER, 4), 0);
    /* the pairs are consecutive data-parallel ranks {0, 1}, {2, 3}; the
     * replica sets {0, 2}, {1, 3} */
    if (log.n > 2) {
        CHECK_INT(log.c[0].op, COLL_REDUCE_SCATTER);
        CHECK_INT(log.c[0].lanes[0] % 4, 0);
        CHECK_INT(log.c[0].lanes[1] % 4, 1);
        CHECK_INT(log.c[2].op, COLL_ALLREDUCE);
        CHECK_INT(log.c[2].lanes[0] % 4, 0);
        CHECK_INT(log.c[2].lanes[1] % 4, 2);
    }
    par_log_free(&log);
}

/* A ZeRO-3 rank's lane, m = 1, on 2 replicas. Layer 1 is walked first in
 * the backward (half of it: bucket 0, frac 1/2), layer 0 second (bucket
 * 1, frac 1). Signals of replica 0: ready 0, 1; synced 2; updated 3;
 * gathered 4..7; started 8..11.
 *   F: F(0 s, +8 B) [the layers before the first unit: none, its
 *      memory], WAIT(4) SIG(8) F(0.5 s) [layer 0], WAIT(5) SIG(9) F(0.5 s)
 *   B: WAIT(6) SIG(10) B(1 s) SIG(ready 0), WAIT(7) SIG(11) B(1 s)
 *      SIG(ready 1), B(0 s, -8 B)
 *   WAIT(synced 2), OPT (0.5 s / 2) */
static void test_lane(const net *nw)
{
    ps_err err;
    par_step c = config(2, PAR_SHARD_PARAMS, 0, 0);
    c.dp.optimizer_seconds = 0.5;
    prog_set *ps = replicas(2, 1);
    c.ps = ps;
    c.nw = nw;
    CHECK_INT(par_dp_pass.lower(&c, &err), PS_OK);
    /* 2 compute, 2 reduce-scatter and 2 all-gather lanes */
    CHECK_INT(ps->nlanes >= 6, 1);
    const prog_lane *l = &ps->lanes[0];
    static const int type[18] = {
        PROG_COMPUTE, PROG_WAIT,    PROG_SIGNAL, PROG_COMPUTE, PROG_WAIT,
        PROG_SIGNAL,  PROG_COMPUTE, PROG_WAIT,   PROG_SIGNAL,  PROG_COMPUTE,
        PROG_SIGNAL,  PROG_WAIT,    PROG_SIGNAL, PROG_COMPUTE, PROG_SIGNAL,
        PROG_COMPUTE, PROG_WAIT,    PROG_COMPUTE};
    static const int32_t msg[18] = {-1, 4, 8, -1, 5,  9, -1, 6, 10,
                                    -1, 0, 7, 11, -1, 1, -1, 2, -1};
    static const double sec[18] = {0, 0, 0, 0.5, 0, 0, 0.5, 0, 0,
                                   1, 0, 0, 0,   1, 0, 0,   0, 0.25};
    CHECK_INT(l->n, 18);
    for (int32_t i = 0; l->n == 18 && i < 18; i++) {
        CHECK_INT(l->ops[i].type, type[i]);
        if (type[i] == PROG_COMPUTE)
            CHECK_NEAR(l->ops[i].seconds, sec[i]);
        else
            CHECK_INT(l->ops[i].msg, msg[i]);
    }
    if (l->n == 18) {
        CHECK(l->ops[0].mem == 8 && l->ops[3].mem == 0);
        CHECK(l->ops[13].mem == 0 && l->ops[15].mem == -8);
        CHECK_INT(l->ops[17].kind, PROG_OPT);
        CHECK_INT(l->ops[1].tag, -2); /* DP_TAG_GATHER: counted exposed */
    }
    /* replica 1's signals follow: 12 per replica (its ready 0 is 12) */
    CHECK_INT(ps->lanes[1].n, 18);
    if (ps->lanes[1].n == 18)
        CHECK_INT(ps->lanes[1].ops[10].msg, 12);
    /* the gather lane of replica 0: gather 0 at once, gather k after
     * started k - 1, each raising gathered */
    const prog_lane *g = &ps->lanes[4];
    int waits = 0, signals = 0, first_wait = -1;
    for (int32_t i = 0; i < g->n; i++) {
        if (g->ops[i].type == PROG_WAIT && first_wait < 0)
            first_wait = g->ops[i].msg;
        waits += g->ops[i].type == PROG_WAIT;
        signals += g->ops[i].type == PROG_SIGNAL;
    }
    CHECK_INT(waits, 3);
    CHECK_INT(signals >= 4, 1);
    CHECK_INT(first_wait, 8);
    CHECK_INT(prog_seal(ps, &err), PS_OK);
    prog_free(ps);
    /* a split backward (W) is refused, named */
    c = config(2, PAR_SHARD_GRADS, 0, 0);
    ps = replicas(2, 1);
    for (int32_t j = 0; j < 2; j++) {
        prog_op w = prog_compute(PROG_W, 0, 0, 0, 1, 0);
        CHECK_INT(prog_push(ps, j, &w), PS_OK);
    }
    c.ps = ps;
    c.nw = nw;
    c.sched.kind = SCHED_ZB_H1;
    CHECK_INT(par_dp_pass.lower(&c, &err), PS_ERR);
    CHECK_HAS(err.msg, "zero = 2 is not modelled with a split backward");
    prog_free(ps);
}

/* Static bytes per rank of 400 parameters on 4 ranks (16 per parameter
 * unsharded), and the buffers beyond: ZeRO-1 its buckets' padding (of 50,
 * 200 and 150 parameters, each padded to a multiple of lcm(4, 128) = 128:
 * 78 + 56 + 106 = 240 elements at 2 + 2 bytes in the gradient and
 * parameter buffers, par/dp.c stage_pad), ZeRO-2 two 400-byte buckets (at
 * most the 800 gradient bytes), ZeRO-3 two units of the largest layer
 * (300) in weights and gradients, 2 x 300 x 4. */
static void test_memory(void)
{
    double want[4] = {400 * 16, 400 * (4 + 12 / 4.0), 400 * (2 + 14 / 4.0),
                      400 * 16 / 4.0};
    double extra[4] = {0, 240 * 4, 800, 2400};
    for (int zero = 0; zero < 4; zero++) {
        par_step c = config(4, zero, 0, 0);
        double rank_static[4] = {0};
        par_dp_pass.memory(&c, rank_static);
        for (int r = 0; r < 4; r++)
            CHECK_NEAR(rank_static[r], want[zero] + extra[zero]);
    }
    /* reshard_after_forward 2 of 4: the rank's 400 parameters held at 1/2
     * rather than 1/4 between forward and backward: 400 x 2 x 1/4 */
    par_step c = config(4, PAR_SHARD_PARAMS, 0, 2);
    double rank_static[4] = {0};
    par_dp_pass.memory(&c, rank_static);
    CHECK_NEAR(rank_static[0], 1600 + 2400 + 200);
}

int main(void)
{
    ps_err err;
    net *nw = net_new(4);
    CHECK_INT(net_set_mesh(nw, 1e9, 1e-6, &err), PS_OK);
    CHECK_INT(net_finalize(nw, &err), PS_OK);
    test_volumes(nw);
    test_lane(nw);
    test_memory();
    net_free(nw);
    par_sim_free(&sim);
    return harness_done();
}
