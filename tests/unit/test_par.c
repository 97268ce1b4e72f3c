/* The parallel layout (par/layout.c), the simulated ranks (par/sim.c) and
 * the fold rule (par/links.c). Groups from Megatron-LM's own example
 * (megatron/core/parallel_state.py, initialize_model_parallel's docstring,
 * core_v0.19.0: 16 GPUs, tp 2, pp 4, dp 2); the rest worked out by hand in
 * the comments. tests/lua/test_layout.lua holds the layout against a port
 * of RankGenerator on many more sizes. */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "net/net.h"
#include "par/layout.h"
#include "par/links.h"
#include "par/sim.h"

static void check_group(const par_layout *L, unsigned mask, int32_t g,
                        const int32_t *want, int32_t n)
{
    int32_t got[64];
    CHECK_INT(par_group(L, mask, g, got), n);
    for (int32_t i = 0; i < n; i++)
        CHECK_INT(got[i], want[i]);
}

/* A layout of tp x dp x pp in Megatron's default order. */
static par_layout layout_of(int32_t tp, int32_t dp, int32_t pp, par_sizes *s)
{
    ps_err err;
    par_layout L;
    par_sizes_init(s);
    s->tp = tp;
    s->dp = dp;
    s->pp = pp;
    CHECK_INT(par_layout_init(&L, s, PAR_DP_INNER, NULL, &err), PS_OK);
    return L;
}

static void test_megatron_example(void)
{
    ps_err err;
    par_sizes s;
    par_layout L = layout_of(2, 2, 4, &s);
    CHECK_INT(par_world(&L), 16);
    /* 8 data-parallel groups [g0, g2], [g1, g3], [g4, g6], ... */
    CHECK_INT(par_group_count(&L, PAR_BIT(PAR_DP)), 8);
    check_group(&L, PAR_BIT(PAR_DP), 0, (const int32_t[]){0, 2}, 2);
    check_group(&L, PAR_BIT(PAR_DP), 1, (const int32_t[]){1, 3}, 2);
    check_group(&L, PAR_BIT(PAR_DP), 2, (const int32_t[]){4, 6}, 2);
    /* 8 tensor groups [g0, g1], ..., [g14, g15] */
    check_group(&L, PAR_BIT(PAR_TP), 7, (const int32_t[]){14, 15}, 2);
    /* 4 pipeline groups [g0, g4, g8, g12], [g1, g5, g9, g13], ... */
    CHECK_INT(par_group_count(&L, PAR_BIT(PAR_PP)), 4);
    check_group(&L, PAR_BIT(PAR_PP), 1, (const int32_t[]){1, 5, 9, 13}, 4);
    /* rank 13 = tp 1 + 2 (dp 0 + 2 pp 3) */
    int32_t c[PAR_NDIMS];
    par_coords(&L, 13, 0, c);
    CHECK_INT(c[PAR_TP], 1);
    CHECK_INT(c[PAR_DP], 0);
    CHECK_INT(c[PAR_PP], 3);
    CHECK_INT(par_rank(&L, c), 13);
    CHECK_INT(par_group_of(&L, PAR_BIT(PAR_PP), 13), 1);
    CHECK_INT(par_group_of(&L, PAR_BIT(PAR_DP), 13), 7); /* [g13, g15] */
    /* the expert side with etp = tp: ep 1, edp = dp */
    CHECK_INT(L.edp, 2);
    check_group(&L, PAR_BIT(PAR_DP) | PAR_EXPERT, 0, (const int32_t[]){0, 2},
                2);
    /* pp_inner (--use-tp-pp-dp-mapping): rank = tp + 2 (pp + 4 dp), so
     * replica 1's pipeline is 8, 10, 12, 14 */
    CHECK_INT(par_layout_init(&L, &s, PAR_PP_INNER, NULL, &err), PS_OK);
    check_group(&L, PAR_BIT(PAR_PP), 2, (const int32_t[]){8, 10, 12, 14}, 4);
    check_group(&L, PAR_BIT(PAR_DP), 0, (const int32_t[]){0, 8}, 2);
    CHECK_STR(par_order_name(L.order), "tp-cp-ep-pp-dp");
}

/* An explicit list numbers ranks pp_inner: entry (j p + r) t + k. */
static void test_list(void)
{
    ps_err err;
    par_sizes s;
    par_sizes_init(&s);
    s.tp = 2;
    s.pp = 2;
    s.dp = 2;
    int32_t list[8] = {70, 71, 60, 61, 50, 51, 40, 41};
    par_layout L;
    CHECK_INT(par_layout_init(&L, &s, PAR_DP_INNER, list, &err), PS_OK);
    check_group(&L, PAR_BIT(PAR_PP), 0, (const int32_t[]){70, 60}, 2);
    check_group(&L, PAR_BIT(PAR_DP), 0, (const int32_t[]){70, 50}, 2);
    const int32_t c[PAR_NDIMS] = {1, 0, 0, 1, 1};
    CHECK_INT(par_rank(&L, c), 41);
}

/* par_layout_init of tp, ep, dp, pp in order fails with msg. */
static void check_refused(int32_t tp, int32_t ep, int32_t dp, int32_t pp,
                          enum par_order order, const char *msg)
{
    ps_err err;
    par_sizes s;
    par_layout L;
    par_sizes_init(&s);
    s.tp = tp;
    s.ep = ep;
    s.dp = dp;
    s.pp = pp;
    CHECK_INT(par_layout_init(&L, &s, order, NULL, &err), PS_ERR);
    CHECK_STR(err.msg, msg);
}

static void test_errors(void)
{
    ps_err err;
    check_refused(0, 1, 1, 1, PAR_DP_INNER, "tp must be at least 1, got 0");
    check_refused(1024, 1, 2, 1024, PAR_DP_INNER,
                  "tp 1024 x cp 1 x dp 2 x pp 1024 is 2097152 ranks, more "
                  "than the limit of 1048576");
    check_refused(2, 3, 4, 1, PAR_DP_INNER,
                  "etp 2 x ep 3 x pp 1 (6 ranks) does not divide the world "
                  "of 8 ranks");
    /* Megatron's assert: pp_inner needs the expert dp equal to dp */
    check_refused(1, 2, 4, 2, PAR_PP_INNER,
                  "placement pp_inner (and an explicit ranks list) needs the "
                  "expert data-parallel size (2) to equal dp (4), as "
                  "Megatron-LM asserts");
    enum par_order o;
    CHECK_INT(par_parse_order("tp-cp-ep-pp-dp", &o, &err), PS_OK);
    CHECK_INT(o, PAR_PP_INNER);
    CHECK_INT(par_parse_order("dp", &o, &err), PS_ERR);
}

static void test_span(void)
{
    par_span sp;
    /* 8 ranks on 8-GPU nodes with 4 NICs: ranks 8..15 of node 1, two a
     * NIC */
    const int32_t a[4] = {8, 9, 10, 11};
    par_span_of(a, 4, 8, 4, &sp);
    CHECK_INT(sp.nodes, 1);
    CHECK_INT(sp.per_node, 4);
    CHECK_INT(sp.per_nic, 2);
    const int32_t b[4] = {0, 8, 16, 24}; /* a rank a node */
    par_span_of(b, 4, 8, 8, &sp);
    CHECK_INT(sp.nodes, 4);
    CHECK_INT(sp.per_node, 1);
    CHECK_INT(sp.per_nic, 1);
    const int32_t u[4] = {9, 1, 8, 0}; /* unsorted: the same answer */
    par_span_of(u, 4, 8, 0, &sp);
    CHECK_INT(sp.nodes, 2);
    CHECK_INT(sp.per_node, 2);
    CHECK_INT(sp.per_nic, 0);
}

/* tp 2, pp 2, dp 2 (dp_inner: rank = k + 2 (j + 2 r)). Folded TP: 2
 * instances (the replicas), each simulated rank stands for its TP group.
 * Unfolded: 4 instances, i = 2 j + k. */
static void test_sim(void)
{
    ps_err err;
    par_sizes s;
    par_layout L = layout_of(2, 2, 2, &s);
    par_sim sim = {0};
    int fold[PAR_NDIMS] = {0};
    fold[PAR_TP] = 1;
    CHECK_INT(par_sim_build(&sim, &L, fold, &err), PS_OK);
    CHECK_INT(sim.n, 2);
    CHECK_INT(sim.per, 2);
    const int32_t rank_of[4] = {0, 4, 2, 6};
    for (int k = 0; k < 4; k++)
        CHECK_INT(sim.rank_of[k], rank_of[k]);
    CHECK_INT(sim.member[2 * 3], 6); /* simulated rank 3 stands for 6, 7 */
    CHECK_INT(sim.member[2 * 3 + 1], 7);
    int32_t c[PAR_NDIMS], grp[4];
    par_sim_member_coords(&sim, &L, 3, 1, c);
    CHECK_INT(c[PAR_TP], 1);
    CHECK_INT(c[PAR_DP], 1);
    CHECK_INT(c[PAR_PP], 1);
    CHECK_INT(par_sim_group(&sim, PAR_BIT(PAR_DP), 1, grp), 2);
    CHECK_INT(grp[0], 0);
    CHECK_INT(grp[1], 1);
    fold[PAR_TP] = 0;
    CHECK_INT(par_sim_build(&sim, &L, fold, &err), PS_OK);
    CHECK_INT(sim.n, 4);
    CHECK_INT(sim.per, 1);
    CHECK_INT(sim.rank_of[1 * 2 + 0], 1); /* instance 1: tp 1 of replica 0 */
    CHECK_INT(par_sim_group(&sim, PAR_BIT(PAR_DP), 1, grp), 2);
    CHECK_INT(grp[0], 1); /* tp 1's replicas: instances 1 and 3 */
    CHECK_INT(grp[1], 3);
    CHECK_INT(par_sim_group_head(&sim, PAR_BIT(PAR_DP), 3), 0);
    par_sim_free(&sim);
}

/* A cluster of 2 nodes x 2 GPUs, TP inside a node, the pipeline across. */
static net *cluster(int32_t nics, double over)
{
    ps_err err;
    net *nw = net_new(4);
    net_cluster c = {2, 2, nics, 300e9, 1e-6, 25e9, 5e-6, over};
    CHECK_INT(net_build_cluster(nw, &c, &err), PS_OK);
    return nw;
}

static void test_fold(void)
{
    ps_err err;
    par_sizes s;
    par_layout L = layout_of(2, 1, 2, &s);
    net *mesh = net_new(4);
    CHECK_INT(net_set_mesh(mesh, 1e9, 1e-6, &err), PS_OK);
    CHECK_INT(par_fold_exact(&L, PAR_TP, mesh, &err), 1);
    net *own = cluster(2, 1), *shared = cluster(1, 1), *over = cluster(2, 2);
    CHECK_INT(par_fold_exact(&L, PAR_TP, own, &err), 1);
    CHECK_INT(par_fold_exact(&L, PAR_TP, shared, &err), 0);
    CHECK_INT(par_fold_exact(&L, PAR_TP, over, &err), 0);
    /* tp 1: nothing to fold */
    s.tp = 1;
    CHECK_INT(par_layout_init(&L, &s, PAR_DP_INNER, NULL, &err), PS_OK);
    CHECK_INT(par_fold_exact(&L, PAR_TP, shared, &err), 1);
    net_free(mesh);
    net_free(own);
    net_free(shared);
    net_free(over);
}

int main(void)
{
    test_megatron_example();
    test_list();
    test_errors();
    test_span();
    test_sim();
    test_fold();
    return harness_done();
}
