/* Collectives: alpha-beta closed forms on dedicated mesh links (exact to
 * 1e-9), bytes sent, busbw, data mode (bit-exact integer sums for every op
 * and algorithm, tolerance on random data, uneven counts, N = 1, 3, 5, 8,
 * non-zero roots, rank subsets), auto and the derived ring/tree crossover,
 * and the error messages. */
#include "coll/coll.h"
#include "harness.h"

#include <math.h>
#include <stdlib.h>

#define ALPHA 5e-6
#define BETA 25e9

typedef struct ctx {
    net *nw;
    eng_sim *eng;
    prog_set *ps;
} ctx;

static ctx mesh(int32_t n, double bw, double lat)
{
    ctx c = {net_new(n), eng_new(), prog_new(n)};
    ps_err err;
    CHECK_INT(net_set_mesh(c.nw, bw, lat, &err), 0);
    return c;
}

static void ctx_free(ctx *c)
{
    net_free(c->nw);
    eng_free(c->eng);
    prog_free(c->ps);
}

static double run_time(ctx *c, enum coll_op op, int algo, int64_t bytes,
                       coll_result *res)
{
    coll_spec s = {.op = op, .algorithm = algo, .bytes = bytes};
    ps_err err;
    int rc = coll_run(&s, c->nw, c->eng, c->ps, res, &err);
    if (rc)
        printf("coll_run %s %s: %s\n", coll_op_name(op), coll_algo_name(algo),
               err.msg);
    CHECK_INT(rc, 0);
    return res->time;
}

static void test_closed_forms(void)
{
    static const int32_t ns[] = {2, 3, 4, 5, 7, 8, 16, 33, 64};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        int32_t N = ns[k];
        ctx c = mesh(N, BETA, ALPHA);
        double T = 4.0 * N * 1000, a = ALPHA, b = BETA;
        double lg = ceil(log2(N));
        coll_result r;
        CHECK_NEAR(run_time(&c, COLL_ALLREDUCE, COLL_RING, (int64_t)T, &r),
                   2 * (N - 1) * (a + T / (N * b)));
        for (int32_t i = 0; i < N; i++)
            CHECK_NEAR(r.bytes_sent[i], 2 * T * (N - 1) / N);
        CHECK_NEAR(r.algbw, T / r.time);
        CHECK_NEAR(r.busbw, r.algbw * 2 * (N - 1) / N);
        CHECK_NEAR(r.predicted, r.time);
        CHECK_INT(r.transfers, 2 * (int64_t)N * (N - 1));
        coll_result_free(&r);
        CHECK_NEAR(run_time(&c, COLL_REDUCE_SCATTER, COLL_RING, (int64_t)T, &r),
                   (N - 1) * (a + T / (N * b)));
        CHECK_NEAR(r.busbw, r.algbw * (N - 1) / N);
        coll_result_free(&r);
        CHECK_NEAR(run_time(&c, COLL_ALLGATHER, COLL_RING, (int64_t)T, &r),
                   (N - 1) * (a + T / (N * b)));
        coll_result_free(&r);
        CHECK_NEAR(
            run_time(&c, COLL_BROADCAST, COLL_BINOMIAL_TREE, (int64_t)T, &r),
            lg * (a + T / b));
        CHECK_NEAR(r.busbw, r.algbw);
        coll_result_free(&r);
        CHECK_NEAR(
            run_time(&c, COLL_REDUCE, COLL_BINOMIAL_TREE, (int64_t)T, &r),
            lg * (a + T / b));
        coll_result_free(&r);
        CHECK_NEAR(
            run_time(&c, COLL_ALLREDUCE, COLL_BINOMIAL_TREE, (int64_t)T, &r),
            2 * lg * (a + T / b));
        CHECK_NEAR(r.predicted, r.time);
        coll_result_free(&r);
        if ((N & (N - 1)) == 0) {
            double l2 = log2(N);
            CHECK_NEAR(run_time(&c, COLL_ALLREDUCE, COLL_HALVING_DOUBLING,
                                (int64_t)T, &r),
                       2 * l2 * a + 2.0 * (N - 1) / N * T / b);
            CHECK_NEAR(r.predicted, r.time);
            coll_result_free(&r);
            CHECK_NEAR(run_time(&c, COLL_REDUCE_SCATTER, COLL_HALVING_DOUBLING,
                                (int64_t)T, &r),
                       l2 * a + (N - 1.0) / N * T / b);
            coll_result_free(&r);
        }
        /* dedicated links: direct is two steps of one shard */
        CHECK_NEAR(run_time(&c, COLL_ALLREDUCE, COLL_DIRECT, (int64_t)T, &r),
                   2 * (a + T / (N * b)));
        CHECK_NEAR(r.predicted, r.time);
        coll_result_free(&r);
        /* the chain pipeline with 4 chunks: N + 2 steps of T/4 */
        coll_spec s = {.op = COLL_BROADCAST,
                       .algorithm = COLL_PIPELINE,
                       .bytes = (int64_t)T,
                       .chunks = 4,
                       .root = N - 1};
        ps_err err;
        CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), 0);
        CHECK_NEAR(r.time, (4 + N - 2) * (a + T / 4 / b));
        CHECK_NEAR(r.predicted, r.time);
        coll_result_free(&r);
        ctx_free(&c);
    }
}

/* ------------------------------------------------------------------ */

static double small_int(void *u, int32_t rank, int64_t i)
{
    (void)u;
    return (double)((rank * 7 + i * 3) % 17) - 8;
}

static const int ops_algos[][2] = {
    {COLL_ALLREDUCE, COLL_RING},
    {COLL_ALLREDUCE, COLL_BINOMIAL_TREE},
    {COLL_ALLREDUCE, COLL_DOUBLE_BINARY_TREE},
    {COLL_ALLREDUCE, COLL_HALVING_DOUBLING},
    {COLL_ALLREDUCE, COLL_DIRECT},
    {COLL_ALLREDUCE, COLL_HIERARCHICAL},
    {COLL_REDUCE_SCATTER, COLL_RING},
    {COLL_REDUCE_SCATTER, COLL_HALVING_DOUBLING},
    {COLL_REDUCE_SCATTER, COLL_DIRECT},
    {COLL_ALLGATHER, COLL_RING},
    {COLL_ALLGATHER, COLL_HALVING_DOUBLING},
    {COLL_ALLGATHER, COLL_DIRECT},
    {COLL_BROADCAST, COLL_BINOMIAL_TREE},
    {COLL_BROADCAST, COLL_PIPELINE},
    {COLL_BROADCAST, COLL_SCATTER_ALLGATHER},
    {COLL_REDUCE, COLL_BINOMIAL_TREE},
};

/* 1 (and a message) when an output of r, run with small_int inputs on the
 * listed ranks, differs from the integer result. */
static int exact_bad(enum coll_op op, int algo, const int32_t *ranks, int32_t N,
                     int64_t n, int32_t root, const coll_result *r)
{
    for (int32_t i = 0; i < N; i++) {
        int64_t lo = 0;
        int64_t want_cnt = n;
        if (op == COLL_REDUCE_SCATTER) {
            lo = i * (n / N) + (i < n % N ? i : n % N);
            want_cnt = n / N + (i < n % N);
        } else if (op == COLL_REDUCE && ranks[i] != root) {
            want_cnt = 0;
        }
        if (r->out_count[i] != want_cnt)
            return 1;
        for (int64_t e = 0; e < r->out_count[i]; e++) {
            int64_t g = lo + e;
            double want = 0;
            if (op == COLL_ALLREDUCE || op == COLL_REDUCE_SCATTER ||
                op == COLL_REDUCE) {
                for (int32_t j = 0; j < N; j++)
                    want += small_int(NULL, ranks[j], g);
            } else if (op == COLL_BROADCAST) {
                want = small_int(NULL, root, g);
            } else {
                int32_t o = 0;
                while (o + 1 < N &&
                       (o + 1) * (n / N) + (o + 1 < n % N ? o + 1 : n % N) <= g)
                    o++;
                want = small_int(NULL, ranks[o], g);
            }
            if ((double)r->outputs[i][e] != want) {
                printf("N=%d n=%lld %s %s rank %d element %lld: %g != %g\n",
                       (int)N, (long long)n, coll_op_name(op),
                       coll_algo_name(algo), (int)ranks[i], (long long)g,
                       (double)r->outputs[i][e], want);
                return 1;
            }
        }
    }
    return 0;
}

/* Every op x algorithm on N listed ranks out of a cluster of N + 2 (listed
 * in a scrambled order, root in the middle), n elements: the run verifies
 * within tolerance; with small integers the outputs must be bit-exact. */
static void data_case(int32_t N, int64_t n, enum coll_data mode, int fair)
{
    int32_t C = N + 2;
    ctx c = mesh(C, 1e9, 1e-6);
    if (fair)
        net_set_sharing(c.nw, NET_FAIR);
    /* a permutation of N of the C ranks: C-1, 0, C-3, C-2, C-5, ... */
    int32_t *ranks = malloc((size_t)N * sizeof *ranks);
    for (int32_t i = 0; i < N; i++)
        ranks[i] = (C - 1 - i + 2 * (i % 2)) % C;
    for (size_t k = 0; k < sizeof ops_algos / sizeof *ops_algos; k++) {
        enum coll_op op = ops_algos[k][0];
        int algo = ops_algos[k][1];
        coll_spec s = {.op = op,
                       .algorithm = algo,
                       .bytes = 4 * n,
                       .ranks = ranks,
                       .nranks = N,
                       .root = ranks[N / 2],
                       .ranks_per_node = N % 4 == 0 ? 4 : N,
                       .data = mode,
                       .data_fn = small_int,
                       .seed = 42};
        coll_result r;
        ps_err err;
        int rc = coll_run(&s, c.nw, c.eng, c.ps, &r, &err);
        if (rc)
            printf("N=%d n=%lld %s %s: %s\n", (int)N, (long long)n,
                   coll_op_name(op), coll_algo_name(algo), err.msg);
        CHECK_INT(rc, 0);
        if (rc)
            continue;
        CHECK_INT(r.algorithm, algo);
        if (N == 1)
            CHECK_NEAR(r.time, 0);
        if (mode != COLL_DATA_FN) {
            coll_result_free(&r);
            continue;
        }
        /* bit-exact against the integer result */
        CHECK_INT(exact_bad(op, algo, ranks, N, n, s.root, &r), 0);
        coll_result_free(&r);
    }
    free(ranks);
    ctx_free(&c);
}

static void test_data(void)
{
    static const int32_t ns[] = {1, 2, 3, 5, 8, 12};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        data_case(ns[k], 37, COLL_DATA_FN, 0);   /* uneven shards */
        data_case(ns[k], 3, COLL_DATA_FN, 0);    /* fewer elements than N */
        data_case(ns[k], 1000, COLL_DATA_FN, 1); /* FAIR sharing */
        data_case(ns[k], 1001, COLL_DATA_RANDOM, 0);
    }
}

/* Hierarchical allreduce on a 4 x 4 cluster under fair sharing, data
 * checked; and the model's intra/inter split. */
static void test_hierarchical_cluster(void)
{
    net_cluster cl = {.nodes = 4,
                      .gpus_per_node = 4,
                      .nics_per_node = 2,
                      .intra_bw = 300e9,
                      .intra_lat = 2e-6,
                      .inter_bw = 50e9,
                      .inter_lat = 8e-6};
    net *nw = net_new(16);
    ps_err err;
    CHECK_INT(net_build_cluster(nw, &cl, &err), 0);
    eng_sim *e = eng_new();
    prog_set *ps = prog_new(16);
    coll_spec s = {.op = COLL_ALLREDUCE,
                   .algorithm = COLL_HIERARCHICAL,
                   .bytes = 4 * 4096,
                   .ranks_per_node = 4,
                   .data = COLL_DATA_RANDOM,
                   .seed = 7};
    coll_result r;
    CHECK_INT(coll_run(&s, nw, e, ps, &r, &err), 0);
    /* ring reduce-scatter and all-gather inside each node (3 steps of
     * B/4 at 300 GB/s, 2 us each), and between them the all-reduce of the
     * node's quarter over 4 nodes (6 steps of B/16 at 8 us), where each
     * NIC carries two GPUs' flows at once: 50 GB/s halved. The cost model
     * (predicted) gives each its NIC alone. */
    double want = 2 * 3 * (2e-6 + 4096 / 300e9) + 6 * (8e-6 + 1024 / 25e9);
    CHECK(fabs(r.time - want) <= 1e-9 * want);
    CHECK(fabs(r.predicted - (want - 6 * 1024 / 50e9)) <= 1e-9 * want);
    coll_result_free(&r);
    s.algorithm = COLL_AUTO;
    s.data = COLL_DATA_NONE;
    s.bytes = 1 << 28;
    CHECK_INT(coll_run(&s, nw, e, ps, &r, &err), 0);
    CHECK_STR(coll_algo_name(r.algorithm), "hierarchical");
    coll_result_free(&r);
    s.ranks_per_node = 3;
    s.algorithm = COLL_HIERARCHICAL;
    CHECK_INT(coll_run(&s, nw, e, ps, &r, &err), PS_ERR);
    CHECK_STR(err.msg,
              "hierarchical allreduce: 16 ranks do not split into nodes of 3");
    s.ranks_per_node = 0;
    CHECK_INT(coll_run(&s, nw, e, ps, &r, &err), PS_ERR);
    CHECK_STR(err.msg, "hierarchical allreduce needs ranks_per_node");
    eng_free(e);
    prog_free(ps);
    net_free(nw);
}

/* Ring channels on 2 nodes x 4 GPUs (FAIR, the cluster default; intra
 * 100 GB/s 1 us, inter 10 GB/s 5 us). With C channels a ring step moves
 * blocks of B = T / (C N): a GPU sends C - 1 of them (C when C < g: the
 * GPUs that leave the node in no channel) to its node neighbour over its
 * uplink, and each NIC carries one channel per direction, so every step
 * takes max(a_in + k B / b_in, a_out + B / b_out) (every GPU has an inter-
 * node flow, so the ranks stay in step) and allreduce 2(N - 1) of them:
 * exact, and the model predicts it exactly. T = 256 MiB: 11.81 ms with one
 * NIC per GPU (4 channels), 23.56 ms with 2, 47.05 ms for one ring. */
static void test_ring_channels(void)
{
    const double ai = 1e-6, bi = 100e9, ao = 5e-6, bo = 10e9;
    const int64_t T = 256 << 20;
    const int32_t N = 8, g = 4;
    double one_ring = 0;
    for (int32_t nics = 4; nics >= 1; nics /= 2) {
        net_cluster cl = {.nodes = 2,
                          .gpus_per_node = g,
                          .nics_per_node = nics,
                          .intra_bw = bi,
                          .intra_lat = ai,
                          .inter_bw = bo,
                          .inter_lat = ao};
        ctx c = {net_new(N), eng_new(), prog_new(N)};
        ps_err err;
        CHECK_INT(net_build_cluster(c.nw, &cl, &err), 0);
        CHECK_INT(net_sharing_of(c.nw), NET_FAIR);
        coll_spec s = {.op = COLL_ALLREDUCE,
                       .algorithm = COLL_RING,
                       .bytes = T,
                       .ranks_per_node = g,
                       .slots = 1};
        coll_result r;
        CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), 0);
        int32_t C = nics;
        double B = (double)T / (C * N), k = C == g ? C - 1 : C;
        double step = fmax(ai + k * B / bi, ao + B / bo);
        CHECK_INT(r.channels, C);
        CHECK_NEAR(r.time, 2 * (N - 1) * step);
        CHECK_NEAR(r.predicted, r.time);
        for (int32_t i = 0; i < N; i++)
            CHECK_NEAR(r.bytes_sent[i], 2.0 * T * (N - 1) / N);
        CHECK_INT(r.transfers, 2 * (int64_t)(N - 1) * N * C);
        double channelled = r.time;
        coll_result_free(&r);
        if (nics == 4) {
            CHECK_NEAR(channelled, 11.8140512e-3);
            /* ranks_per_node unknown: one ring, whose inter-node hop has
             * one NIC: 2(N-1)(a_out + T / (N b_out)) */
            s.ranks_per_node = 0;
            CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), 0);
            CHECK_INT(r.channels, 1);
            one_ring = r.time;
            CHECK_NEAR(one_ring, 2 * (N - 1) * (ao + (double)T / (N * bo)));
            CHECK_NEAR(r.predicted, r.time);
            CHECK(one_ring > 3.9 * channelled);
            coll_result_free(&r);
            /* reduce_scatter and allgather: N - 1 steps of the same */
            s.ranks_per_node = g;
            s.op = COLL_REDUCE_SCATTER;
            CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), 0);
            CHECK_NEAR(r.time, channelled / 2);
            CHECK_NEAR(r.predicted, r.time);
            coll_result_free(&r);
            s.op = COLL_ALLGATHER;
            CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), 0);
            CHECK_NEAR(r.time, channelled / 2);
            coll_result_free(&r);
        }
        if (nics == 2)
            CHECK_NEAR(channelled, 23.5581024e-3);
        if (nics == 4) {
            /* the full-bisection core is slack (net_finalize) and left out
             * of FAIR's components; a core a hair narrower is not, and
             * gives the same time */
            net_cluster narrow = cl;
            narrow.oversubscription = 1 + 1e-9;
            s.op = COLL_ALLREDUCE;
            net *nw2 = net_new(N);
            CHECK_INT(net_build_cluster(nw2, &narrow, &err), 0);
            CHECK_INT(coll_run(&s, nw2, c.eng, c.ps, &r, &err), 0);
            CHECK_NEAR(r.time, channelled);
            coll_result_free(&r);
            net_free(nw2);
        }

        /* data: exact integer sums on awkward sizes (3 < C N elements),
         * every rank and the nodes listed the other way round */
        static const int32_t swapped[] = {4, 5, 6, 7, 0, 1, 2, 3};
        static const int32_t in_order[] = {0, 1, 2, 3, 4, 5, 6, 7};
        static const enum coll_op ops[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER,
                                           COLL_ALLGATHER};
        for (int l = 0; l < 2; l++)
            for (int o = 0; o < 3; o++)
                for (int64_t n = 37; n > 0; n = n == 37 ? 3 : 0) {
                    const int32_t *ranks = l ? swapped : in_order;
                    coll_spec d = {.op = ops[o],
                                   .algorithm = COLL_RING,
                                   .bytes = 4 * n,
                                   .ranks = l ? swapped : NULL,
                                   .nranks = N,
                                   .ranks_per_node = g,
                                   .data = COLL_DATA_FN,
                                   .data_fn = small_int};
                    int rc = coll_run(&d, c.nw, c.eng, c.ps, &r, &err);
                    if (rc)
                        printf("channels %s n=%lld: %s\n", coll_op_name(ops[o]),
                               (long long)n, err.msg);
                    CHECK_INT(rc, 0);
                    if (rc)
                        continue;
                    CHECK_INT(r.channels, C);
                    CHECK_INT(exact_bad(ops[o], COLL_RING, ranks, N, n, 0, &r),
                              0);
                    coll_result_free(&r);
                }
        ctx_free(&c);
    }
    CHECK(one_ring > 0);

    /* a mesh never runs channels, even with ranks_per_node */
    ctx m = mesh(N, BETA, ALPHA);
    coll_spec s = {.op = COLL_ALLREDUCE,
                   .algorithm = COLL_RING,
                   .bytes = 4 * 8000,
                   .ranks_per_node = g};
    coll_result r;
    ps_err err;
    CHECK_INT(coll_run(&s, m.nw, m.eng, m.ps, &r, &err), 0);
    CHECK_INT(r.channels, 1);
    CHECK_NEAR(r.time, 2 * (N - 1) * (ALPHA + 4 * 8000.0 / (N * BETA)));
    coll_result_free(&r);
    ctx_free(&m);
}

/* ------------------------------------------------------------------ */

static int auto_pick(ctx *c, int64_t bytes, unsigned cand)
{
    coll_spec s = {.op = COLL_ALLREDUCE,
                   .algorithm = COLL_AUTO,
                   .bytes = bytes,
                   .candidates = cand};
    coll_result r;
    ps_err err;
    CHECK_INT(coll_run(&s, c->nw, c->eng, c->ps, &r, &err), 0);
    int a = r.algorithm;
    coll_result_free(&r);
    return a;
}

static void test_auto(void)
{
    int32_t N = 8;
    ctx c = mesh(N, BETA, ALPHA);
    unsigned rt = 1u << COLL_RING | 1u << COLL_BINOMIAL_TREE;
    CHECK_STR(coll_algo_name(auto_pick(&c, 1024, rt)), "binomial_tree");
    CHECK_STR(coll_algo_name(auto_pick(&c, 256 << 20, rt)), "ring");
    /* ring 2(N-1)(a + T/(N b)) = tree 2L(a + T/b), L = ceil(log2 N):
     * T* = (N-1-L) a b / (L - (N-1)/N) */
    double L = 3, a = ALPHA, b = BETA;
    double cross = (N - 1 - L) * a * b / (L - (N - 1.0) / N);
    int64_t below = (int64_t)floor(cross / 4) * 4;
    int64_t above = below + 4;
    CHECK(below < cross && above > cross);
    CHECK_STR(coll_algo_name(auto_pick(&c, below, rt)), "binomial_tree");
    CHECK_STR(coll_algo_name(auto_pick(&c, above, rt)), "ring");
    /* the simulated times cross there too */
    coll_result r1, r2;
    run_time(&c, COLL_ALLREDUCE, COLL_BINOMIAL_TREE, below, &r1);
    run_time(&c, COLL_ALLREDUCE, COLL_RING, below, &r2);
    CHECK(r1.time <= r2.time);
    coll_result_free(&r1);
    coll_result_free(&r2);
    run_time(&c, COLL_ALLREDUCE, COLL_BINOMIAL_TREE, above, &r1);
    run_time(&c, COLL_ALLREDUCE, COLL_RING, above, &r2);
    CHECK(r1.time >= r2.time);
    coll_result_free(&r1);
    coll_result_free(&r2);
    /* every algorithm: on a full mesh of dedicated links nothing beats
     * direct (two steps of one shard over N-1 links at once) */
    CHECK_STR(coll_algo_name(auto_pick(&c, 1024, 0)), "direct");
    CHECK_STR(coll_algo_name(auto_pick(&c, 256 << 20, 0)), "direct");
    ctx_free(&c);

    /* a star (one port per rank, fair sharing): direct's N-1 flows share
     * the port; halving-doubling wins large sizes on 8 ranks */
    net *nw = net_new(N);
    ps_err err;
    int32_t sw = net_add_switch(nw);
    for (int32_t r = 0; r < N; r++) {
        net_add_link(nw, r, sw, BETA, ALPHA / 2, &err);
        net_add_link(nw, sw, r, BETA, ALPHA / 2, &err);
    }
    CHECK_INT(net_finalize(nw, &err), 0);
    coll_spec s = {
        .op = COLL_ALLREDUCE, .algorithm = COLL_DIRECT, .bytes = 8 << 20};
    double pd, pr;
    int32_t k;
    CHECK_INT(coll_predict(&s, nw, COLL_DIRECT, &pd, &k, &err), 0);
    CHECK_INT(coll_predict(&s, nw, COLL_RING, &pr, &k, &err), 0);
    CHECK_NEAR(pd, 2 * (ALPHA + 7.0 * (8 << 20) / (8 * BETA)));
    CHECK_NEAR(pr, 14 * (ALPHA + (8 << 20) / (8 * BETA)));
    net_free(nw);
}

/* ------------------------------------------------------------------ */

static void test_errors(void)
{
    ps_err err;
    enum coll_op op;
    int algo;
    CHECK_INT(coll_parse_op("allreduc", &op, &err), PS_ERR);
    CHECK_STR(err.msg, "unknown collective op 'allreduc' (expected "
                       "allreduce, reduce_scatter, allgather, broadcast, "
                       "reduce, alltoall, sendrecv)");
    CHECK_INT(coll_parse_op("reduce_scatter", &op, &err), 0);
    CHECK_INT(op, COLL_REDUCE_SCATTER);
    CHECK_INT(coll_parse_algo(COLL_ALLREDUCE, "pipeline", &algo, &err), PS_ERR);
    CHECK_STR(err.msg, "unknown allreduce algorithm 'pipeline' (expected "
                       "ring, tree, binomial_tree, double_binary_tree, "
                       "halving_doubling, direct, hierarchical, nvls, auto)");
    CHECK_INT(coll_parse_algo(COLL_BROADCAST, "rign", &algo, &err), PS_ERR);
    CHECK_STR(err.msg, "unknown broadcast algorithm 'rign' (expected "
                       "binomial_tree, pipeline, scatter_allgather, auto)");
    CHECK_INT(coll_parse_algo(COLL_BROADCAST, "auto", &algo, &err), 0);
    CHECK_INT(algo, COLL_AUTO);

    ctx c = mesh(4, 1e9, 0);
    coll_result r;
    coll_spec s = {.op = COLL_ALLREDUCE, .algorithm = COLL_RING, .bytes = -4};
    CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), PS_ERR);
    CHECK_STR(err.msg, "allreduce: bytes must be zero or positive, got -4");
    s.bytes = 6;
    CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), PS_ERR);
    CHECK_STR(err.msg, "allreduce: bytes must be a multiple of 4 (float32 "
                       "elements), got 6");
    int32_t ranks[] = {0, 9, 1};
    s.bytes = 64;
    s.ranks = ranks;
    s.nranks = 3;
    CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), PS_ERR);
    CHECK_STR(err.msg, "allreduce: rank 9 is not in the cluster (ranks 0..3)");
    ranks[1] = 0;
    CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), PS_ERR);
    CHECK_STR(err.msg, "allreduce: rank 0 is listed twice");
    ranks[1] = 2;
    s.op = COLL_BROADCAST;
    s.algorithm = COLL_BINOMIAL_TREE;
    s.root = 3;
    CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), PS_ERR);
    CHECK_STR(err.msg, "broadcast: root 3 is not among the ranks");
    s.algorithm = COLL_RING;
    s.root = 2;
    CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), PS_ERR);
    CHECK_STR(err.msg, "broadcast has no algorithm 'ring' (expected "
                       "binomial_tree, pipeline, scatter_allgather, auto)");
    /* N = 1 and bytes = 0: no transfers, zero time */
    s.algorithm = COLL_BINOMIAL_TREE;
    s.nranks = 1;
    ranks[0] = 2;
    CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), 0);
    CHECK_NEAR(r.time, 0);
    CHECK_INT(r.transfers, 0);
    coll_result_free(&r);
    s.nranks = 3;
    ranks[1] = 0; /* ranks 2, 0, 1 */
    s.bytes = 0;
    CHECK_INT(coll_run(&s, c.nw, c.eng, c.ps, &r, &err), 0);
    CHECK_NEAR(r.time, 0);
    CHECK_NEAR(r.algbw, 0);
    coll_result_free(&r);
    ctx_free(&c);
}

int main(void)
{
    test_closed_forms();
    test_data();
    test_hierarchical_cluster();
    test_ring_channels();
    test_auto();
    test_errors();
    return harness_done();
}
