/* Generated programs (sim/gen.h) against the arrays of the same programs: the
 * completion stream of the cursor path (every op, its fields and times, in
 * the order the engine completed them) equals the array path's bit for
 * bit, and so do makespan, events, transfers and the collective's
 * figures; for every generated collective on a mesh (FIFO) and on a
 * cluster (max-min fair), both p2p modes, lockstep and slotted rings; for
 * every generated schedule, the busy times and memory ledgers too; a
 * generator that breaks sim/gen.h's contract fails the run with its rank; the
 * same on a mesh of 1 << 20 ranks; a ring without a hook (the engine's
 * advance_ring) gives the same figures. */
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "harness.h"
#include "net/net.h"
#include "sched/gen_pipe.h"
#include "sched/sched.h"
#include "sim/eng.h"
#include "sim/prog.h"

typedef struct rec_op {
    prog_op op;
    int64_t index;
    int32_t lane, rank;
} rec_op;

typedef struct stream {
    rec_op *v;
    int64_t n, cap;
} stream;

static void on_done(void *ctx, const eng_done *d)
{
    stream *s = ctx;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->v = realloc(s->v, (size_t)s->cap * sizeof *s->v);
    }
    rec_op *r = &s->v[s->n++];
    memset(r, 0, sizeof *r);
    r->op = *d->op;
    r->op.msg = 0; /* message id vs channel id: not comparable */
    r->index = d->index;
    r->lane = d->lane;
    r->rank = d->rank;
}

static int run(coll_spec *spec, net *nw, int stream_it, stream *s,
               coll_result *res)
{
    eng_sim *e = eng_new();
    prog_set *ps = prog_new(net_ranks(nw));
    eng_sink sink = {on_done, NULL, s};
    if (s) /* without one, a ring runs the engine's advance_ring */
        eng_set_sink(e, &sink);
    spec->stream = stream_it;
    ps_err err;
    int rc = coll_run(spec, nw, e, ps, res, &err);
    if (rc)
        printf("coll_run: %s\n", err.msg);
    if (stream_it) /* streamed: nothing stored */
        CHECK_INT(prog_count(ps), 0);
    prog_free(ps);
    eng_free(e);
    return rc;
}

static void compare(coll_spec *spec, net *nw)
{
    stream a = {0}, g = {0};
    coll_result ra, rg;
    CHECK_INT(run(spec, nw, 0, &a, &ra), 0);
    CHECK_INT(run(spec, nw, 1, &g, &rg), 0);
    CHECK_INT(g.n, a.n);
    int64_t diff = -1;
    for (int64_t i = 0; i < a.n && i < g.n && diff < 0; i++)
        if (memcmp(&a.v[i], &g.v[i], sizeof a.v[i]) != 0)
            diff = i;
    CHECK_INT(diff, -1);
    CHECK(memcmp(&ra.time, &rg.time, sizeof ra.time) == 0);
    CHECK_INT(rg.transfers, ra.transfers);
    CHECK_INT(rg.steps, ra.steps);
    CHECK_INT(rg.nranks, ra.nranks);
    CHECK(memcmp(ra.bytes_sent, rg.bytes_sent,
                 (size_t)ra.nranks * sizeof *ra.bytes_sent) == 0);
    /* streamed without a completion hook: the same figures */
    coll_result rn;
    CHECK_INT(run(spec, nw, 1, NULL, &rn), 0);
    CHECK(memcmp(&ra.time, &rn.time, sizeof ra.time) == 0);
    CHECK_INT(rn.transfers, ra.transfers);
    CHECK_INT(rn.steps, ra.steps);
    CHECK(memcmp(ra.bytes_sent, rn.bytes_sent,
                 (size_t)ra.nranks * sizeof *ra.bytes_sent) == 0);
    coll_result_free(&rn);
    coll_result_free(&ra);
    coll_result_free(&rg);
    free(a.v);
    free(g.v);
}

/* A schedule lowered to arrays and generated, on nw, with uneven stages
 * and pipeline ranks scattered over the cluster. */
static void compare_pipe(enum sched_kind kind, int32_t p, int32_t v, int32_t m,
                         net *nw, enum eng_p2p p2p)
{
    sched_stage st[64];
    for (int32_t i = 0; i < p * v; i++)
        st[i] = (sched_stage){1e-3 * (1 + i % 3), 2.1e-3, 1e-3, 1e9 + i, 1e8,
                              4e6 + 1e5 * i,      3e-4,   0};
    int32_t rank_of[16];
    for (int32_t r = 0; r < p; r++)
        rank_of[r] = (r * 7 + 2) % 16;
    sched_spec s = {.kind = kind,
                    .p = p,
                    .v = v,
                    .m = m,
                    .stages = st,
                    .rank_of = rank_of,
                    .placement = SCHED_LOOP};
    CHECK(gen_pipe_applies(&s));
    double stat[16];
    for (int i = 0; i < 16; i++)
        stat[i] = 1e10 * i;
    stream a = {0}, g = {0};
    eng_sink sa = {on_done, NULL, &a}, sg = {on_done, NULL, &g};
    eng_sim *e = eng_new(), *e2 = eng_new();
    prog_set *ps = prog_new(16);
    ps_err err;
    eng_result ra, rg;
    eng_set_sink(e, &sa);
    eng_set_memory(e, stat);
    CHECK_INT(sched_lower(&s, ps, &err), 0);
    CHECK_INT(prog_seal(ps, &err), 0);
    CHECK_INT(eng_run(e, ps, nw, p2p, &ra, &err), 0);
    eng_set_sink(e2, &sg);
    eng_set_memory(e2, stat);
    CHECK_INT(gen_pipe_run(&s, nw, p2p, e2, &rg, &err), 0);
    CHECK(memcmp(&ra, &rg, sizeof ra) == 0);
    CHECK_INT(g.n, a.n);
    int64_t diff = -1;
    for (int64_t i = 0; i < a.n && i < g.n && diff < 0; i++)
        if (memcmp(&a.v[i], &g.v[i], sizeof a.v[i]) != 0)
            diff = i;
    CHECK_INT(diff, -1);
    eng_stats xa, xg;
    eng_stats_of(e, &xa);
    eng_stats_of(e2, &xg);
    CHECK(memcmp(xa.busy, xg.busy, (size_t)p * sizeof *xa.busy) == 0);
    CHECK(memcmp(xa.mem, xg.mem, 16 * sizeof *xa.mem) == 0);
    free(a.v);
    free(g.v);
    prog_free(ps);
    eng_free(e);
    eng_free(e2);
}

/* Generators that break sim/gen.h's contract, one way each (mode): the run
 * fails naming the rank and the op instead of reading out of bounds. */
static int broken_rank(const gen_prog *g, int32_t lane)
{
    (void)g;
    return lane;
}

static int broken_next(const gen_prog *g, int32_t lane, void *state,
                       prog_op *ops)
{
    const int *mode = g->ctx;
    int *calls = state;
    if ((*calls)++ > 0)
        return 0;
    /* channel c carries rank c's sends */
    prog_op send = {.bytes = 8,
                    .msg = lane,
                    .peer = 1 - lane,
                    .type = PROG_SEND,
                    .flags = PROG_BATCH};
    prog_op recv = {
        .bytes = 8, .msg = 1 - lane, .peer = 1 - lane, .type = PROG_RECV};
    ops[0] = send;
    ops[1] = recv;
    switch (*mode) {
    case 0: ops[1].msg = 2; break;             /* a channel it does not have */
    case 1: ops[1].type = PROG_WAIT; break;    /* not a SEND or RECV */
    case 2: ops[0].flags = 0; break;           /* PROG_BATCH missing */
    case 3: ops[1].flags = PROG_BATCH; break;  /* on the last op too */
    case 4: ops[0].type = PROG_COMPUTE; break; /* a compute op in a batch */
    case 5: return 3;                          /* longer than max_batch */
    case 6: ops[0].msg = 0; break;      /* rank 1 sends on rank 0's channel */
    case 7: ops[0].flags = 0; return 1; /* sends only: never received */
    default: break;                     /* unbroken */
    }
    return 2;
}

static void check_broken(void)
{
    net *nw = net_new(2);
    eng_sim *e = eng_new();
    ps_err err;
    CHECK_INT(net_set_mesh(nw, 25e9, 5e-6, &err), 0);
    for (int mode = 0; mode <= 6; mode++) {
        gen_prog g = {2,           2,           2,           mode == 5 ? 1 : 2,
                      sizeof(int), broken_rank, broken_next, &mode,
                      0,           GEN_ANY};
        eng_result res;
        CHECK_INT(eng_run_gen(e, &g, nw, ENG_RENDEZVOUS, &res, &err), PS_ERR);
        CHECK_HAS(err.msg, mode == 6 ? "generated program: rank 1, op "
                                     : "generated program: rank 0, op ");
        CHECK_HAS(err.msg, mode == 5   ? "a batch longer than max_batch"
                           : mode == 6 ? "a channel between two other ranks"
                                       : "not an op, a batch or a channel");
    }
    /* eager sends nobody receives: every lane ends, the run does not */
    int unmet = 7;
    gen_prog gu = {2,           2,           2,      2, sizeof(int),
                   broken_rank, broken_next, &unmet, 0, GEN_ANY};
    eng_result ru;
    CHECK_INT(eng_run_gen(e, &gu, nw, ENG_EAGER, &ru, &err), PS_ERR);
    CHECK_HAS(err.msg, "generated program: channel 0: a SEND never met by a "
                       "RECV");
    /* and the same program unbroken runs: one exchange, a + x / b */
    int ok = 8;
    gen_prog g = {2,           2,           2,   2, sizeof(int),
                  broken_rank, broken_next, &ok, 0, GEN_ANY};
    eng_result res;
    CHECK_INT(eng_run_gen(e, &g, nw, ENG_RENDEZVOUS, &res, &err), PS_OK);
    CHECK_NEAR(res.makespan, 5e-6 + 8 / 25e9);
    CHECK_INT(res.transfers, 2);
    eng_free(e);
    net_free(nw);
}

/* Integer widths (issue 12): on a mesh of 1 << 20 ranks, ring positions
 * and pipeline ranks at both ends of the rank space; the generator and
 * the array agree there, and a pipeline's figures equal the same
 * schedule's on a 3-rank mesh. */
static void check_huge(void)
{
    int32_t n = 1 << 20;
    net *big = net_new(n), *small = net_new(3);
    ps_err err;
    CHECK_INT(net_set_mesh(big, 25e9, 5e-6, &err), 0);
    CHECK_INT(net_set_mesh(small, 25e9, 5e-6, &err), 0);
    int32_t ranks[5] = {n - 1, 0, n / 2, 12345, n - 2};
    coll_spec spec = {.op = COLL_ALLREDUCE,
                      .algorithm = COLL_RING,
                      .bytes = 4 * 1003,
                      .ranks = ranks,
                      .nranks = 5,
                      .slots = 8};
    compare(&spec, big);
    sched_stage st[3];
    for (int32_t i = 0; i < 3; i++)
        st[i] = (sched_stage){1e-3 * (1 + i), 2.1e-3, 1e-3, 1e9, 1e8,
                              4e6 + 1e5 * i,  3e-4,   0};
    int32_t far[3] = {n - 1, 0, n / 2}, near[3] = {0, 1, 2};
    sched_spec s = {.kind = SCHED_1F1B,
                    .p = 3,
                    .v = 1,
                    .m = 8,
                    .stages = st,
                    .rank_of = far,
                    .placement = SCHED_LOOP};
    eng_sim *e = eng_new();
    eng_result a, b;
    CHECK_INT(gen_pipe_run(&s, big, ENG_RENDEZVOUS, e, &a, &err), 0);
    eng_stats x;
    eng_stats_of(e, &x);
    double busy[3] = {x.busy[0], x.busy[1], x.busy[2]};
    s.rank_of = near;
    CHECK_INT(gen_pipe_run(&s, small, ENG_RENDEZVOUS, e, &b, &err), 0);
    eng_stats_of(e, &x);
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    CHECK(memcmp(busy, x.busy, sizeof busy) == 0);
    CHECK_INT(a.transfers, 2 * 2 * 8);
    eng_free(e);
    net_free(big);
    net_free(small);
}

int main(void)
{
    check_broken();
    check_huge();
    static const enum coll_op ops[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER,
                                       COLL_ALLGATHER};
    static const int32_t sizes[] = {2, 3, 8, 13};
    ps_err err;
    for (int topo = 0; topo < 2; topo++) {
        net *nw = net_new(16);
        if (topo == 0) {
            CHECK_INT(net_set_mesh(nw, 25e9, 5e-6, &err), 0);
        } else {
            net_cluster c = {4, 4, 2, 300e9, 1e-6, 25e9, 5e-6, 2};
            CHECK_INT(net_build_cluster(nw, &c, &err), 0);
        }
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
            for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
                for (int slots = 1; slots <= 8; slots += 7)
                    for (int p2p = 0; p2p < 2; p2p++) {
                        /* listed ranks in a scrambled order */
                        int32_t N = sizes[k], ranks[16];
                        for (int32_t i = 0; i < N; i++)
                            ranks[i] = (i * 5 + 3) % 16;
                        coll_spec spec = {.op = ops[o],
                                          .algorithm = COLL_RING,
                                          .bytes = 4 * (1000 + 7 * N),
                                          .ranks = ranks,
                                          .nranks = N,
                                          .slots = slots,
                                          .p2p = (enum eng_p2p)p2p};
                        compare(&spec, nw);
                    }
        static const int32_t ps_[] = {1, 2, 4, 5}, ms[] = {1, 3, 8, 10};
        for (int p2p = 0; p2p < 2; p2p++)
            for (size_t i = 0; i < 4; i++)
                for (size_t j = 0; j < 4; j++) {
                    int32_t p = ps_[i], m = ms[j];
                    compare_pipe(SCHED_GPIPE, p, 1, m, nw, (enum eng_p2p)p2p);
                    compare_pipe(SCHED_1F1B, p, 1, m, nw, (enum eng_p2p)p2p);
                    for (int32_t v = 2; v <= 3 && m % p == 0; v++)
                        compare_pipe(SCHED_INTERLEAVED, p, v, m, nw,
                                     (enum eng_p2p)p2p);
                }
        net_free(nw);
    }
    return harness_done();
}
