/* The front ends' own policy and run life cycle (issue 11: the binding
 * only translates): pipe_config_init's defaults, the layout's rank orders,
 * auto's default candidates, coll_ranks_per_node, and coll_exec recording a
 * collective's rows itself, a failed one as a failed run row. */
#include <stdlib.h>
#include <unistd.h>

#include "coll/coll.h"
#include "harness.h"
#include "par/layout.h"
#include "par/sim.h"
#include "rec/rec.h"
#include "run/sink.h"
#include "step/pipe.h"

static double scalar(rec_db *db, const char *sql)
{
    ps_err err;
    rec_query *q = rec_query_new(db, sql, &err);
    double v = q && rec_query_step(q, &err) == 1 ? rec_query_double(q, 0) : NAN;
    rec_query_free(q);
    return v;
}

static void test_pipe_defaults(void)
{
    pipe_config c;
    pipe_config_init(&c);
    /* ZeRO paper's 2 + 2 + 12 bytes, PyTorch DDP's buckets */
    CHECK_NEAR(c.weight_bytes + c.grad_bytes + c.optimizer_bytes, 16);
    CHECK_NEAR(c.bucket_bytes, 25.0 * 1024 * 1024);
    CHECK_NEAR(c.first_bucket_bytes, 1024 * 1024);
    CHECK_INT(c.grad_algorithm, COLL_AUTO);
    CHECK_INT(c.overlap, 1);
    CHECK_INT(c.p * c.v * c.m * c.dp, 1);
    /* an overlapped F and B costs F + B unless the scenario says otherwise:
     * the one default (the binding sets none of its own) */
    CHECK_NEAR(c.fb_interference, 1);
    CHECK_INT(c.fb_given, 0);
}

/* The simulated ranks of p = 3 stages and dp = 2 replicas in each order:
 * rank_of[j * p + r], stage r of replica j. */
static void test_pipe_place(void)
{
    ps_err err;
    par_sizes sz;
    par_sizes_init(&sz);
    sz.pp = 3;
    sz.dp = 2;
    par_layout L;
    par_sim s = {0};
    const int fold[PAR_NDIMS] = {0};
    CHECK_INT(par_layout_init(&L, &sz, PAR_DP_INNER, NULL, &err), PS_OK);
    CHECK_INT(par_sim_build(&s, &L, fold, &err), PS_OK);
    const int32_t *r = s.rank_of; /* replicas adjacent: r * dp + j */
    CHECK_INT(r[0], 0);
    CHECK_INT(r[1], 2);
    CHECK_INT(r[2], 4);
    CHECK_INT(r[3], 1);
    CHECK_INT(r[5], 5);
    CHECK_INT(par_layout_init(&L, &sz, PAR_PP_INNER, NULL, &err), PS_OK);
    CHECK_INT(par_sim_build(&s, &L, fold, &err), PS_OK);
    r = s.rank_of; /* replica j's pipeline j * p + r */
    CHECK_INT(r[3], 3);
    CHECK_INT(r[1], 1);
    par_sim_free(&s);
    enum par_order o;
    CHECK_INT(par_parse_order("pp_inner", &o, &err), 0);
    CHECK_INT(o, PAR_PP_INNER);
    CHECK_INT(par_parse_order("inner", &o, &err), PS_ERR);
    CHECK_STR(err.msg,
              "unknown placement 'inner' (expected dp_inner or pp_inner)");
}

static void test_coll_defaults(void)
{
    CHECK_INT(coll_default_candidates(COLL_ALLREDUCE),
              1u << COLL_RING | 1u << COLL_TREE | 1u << COLL_NVLS);
    CHECK_INT(coll_default_candidates(COLL_BROADCAST), 0);
    const int32_t whole[4] = {4, 5, 6, 7}, split[4] = {2, 3, 4, 5};
    CHECK_INT(coll_ranks_per_node(4, whole, 4), 4);
    /* two GPUs on each of two nodes */
    CHECK_INT(coll_ranks_per_node(4, split, 4), 2);
    CHECK_INT(coll_ranks_per_node(4, NULL, 0), 4);
    CHECK_INT(coll_ranks_per_node(1, whole, 4), 0);
    /* the data-parallel group of TP rank 0 under TP 2 on 8-GPU nodes */
    const int32_t strided[8] = {0, 2, 4, 6, 8, 10, 12, 14};
    CHECK_INT(coll_ranks_per_node(8, strided, 8), 4);
    /* one rank per node (TP 8), nodes interleaved, a node listed twice,
     * uneven blocks: none applies */
    const int32_t one[2] = {0, 8}, inter[4] = {0, 8, 1, 9},
                  twice[6] = {0, 1, 8, 9, 2, 3}, uneven[5] = {0, 1, 2, 8, 9};
    CHECK_INT(coll_ranks_per_node(8, one, 2), 0);
    CHECK_INT(coll_ranks_per_node(8, inter, 4), 0);
    CHECK_INT(coll_ranks_per_node(8, twice, 6), 0);
    CHECK_INT(coll_ranks_per_node(8, uneven, 5), 0);
}

static void test_coll_exec_records(void)
{
    ps_err err;
    unlink("front.db");
    rec_db *db = rec_open("front.db", &err);
    net *nw = net_new(4);
    coll_ctx *ctx = coll_ctx_new();
    CHECK(db && nw && ctx);
    if (!db || !nw || !ctx)
        goto out;
    CHECK_INT(net_set_mesh(nw, 1e9, 1e-6, &err), 0);
    coll_spec spec = {.op = COLL_ALLREDUCE,
                      .algorithm = COLL_RING,
                      .bytes = 4096,
                      .p2p = ENG_RENDEZVOUS};
    rec_sink sink;
    coll_rec rc = {.sink = run_sink_db(&sink, db), .level = REC_EVENTS};
    coll_result res;
    CHECK_INT(coll_exec(ctx, &spec, nw, &rc, &res, &err), 0);
    CHECK_INT(rc.id, 1);
    CHECK_STR(rc.used_name, "allreduce ring");
    CHECK_NEAR(scalar(db, "SELECT time FROM collective WHERE run = 1"),
               res.time);
    /* streamed from the engine (the ring as a generator): 2 (N - 1)
     * steps of N transfers, each rank's memory baseline */
    CHECK_INT(scalar(db, "SELECT count(*) FROM transfer WHERE run = 1"),
              2 * 3 * 4);
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory WHERE run = 1 AND "
                         "t = 0 AND bytes = 0"),
              4);
    CHECK_NEAR(scalar(db, "SELECT max(t_end) FROM transfer WHERE run = 1"),
               res.time);
    coll_result_free(&res);
    /* a failure inside coll_run once the stream is open drops its rows */
    spec.op = COLL_BROADCAST;
    spec.root = 9;
    CHECK_INT(coll_exec(ctx, &spec, nw, &rc, &res, &err), PS_ERR);
    CHECK_INT(scalar(db, "SELECT count(*) FROM run WHERE status = 'failed'"),
              1);
    CHECK_INT(scalar(db, "SELECT count(*) FROM transfer WHERE run <> 1"), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM span"), 1);
    spec.op = COLL_ALLREDUCE;
    spec.root = 0;
    /* a failure after the spec is read: a failed run row, no collective */
    spec.algorithm = COLL_HIERARCHICAL;
    CHECK_INT(coll_exec(ctx, &spec, nw, &rc, &res, &err), PS_ERR);
    CHECK_INT(rc.id, 3);
    CHECK_INT(scalar(db, "SELECT count(*) FROM run WHERE id = 3 AND "
                         "status = 'failed' AND error LIKE '%needs nodes%'"),
              1);
    CHECK_INT(scalar(db, "SELECT count(*) FROM collective WHERE run = 3"), 0);
out:
    coll_ctx_free(ctx);
    net_free(nw);
    rec_close(db, NULL);
    unlink("front.db");
}

int main(void)
{
    test_pipe_defaults();
    test_pipe_place();
    test_coll_defaults();
    test_coll_exec_records();
    return harness_done();
}
