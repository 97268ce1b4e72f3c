/* make bench: engine and recorder throughput on large pipelines and large
 * ring allreduces.
 * Each figure is the median of several repetitions in this one process, so
 * ratios between rows are meaningful on a noisy machine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll/coll.h"
#include "sim/eng.h"
#include "net/net.h"
#include "step/pipe.h"
#include "sim/prog.h"
#include "rec/rec.h"
#include "run/sink.h"
#include "sched/sched.h"

#include "bench_util.h"

#define REPS 5

typedef struct pipeline_case {
    const char *label;
    enum sched_kind kind;
    int32_t p, v, m;
} pipeline_case;

static void die(const ps_err *err)
{
    fprintf(stderr, "bench: %s\n", err->msg);
    exit(1);
}

/* A fresh database in /tmp; remove_temp_db deletes it and its WAL files. */
static rec_db *open_temp_db(char *path)
{
    ps_err err;
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    unlink(path);
    rec_db *db = rec_open(path, &err);
    if (!db)
        die(&err);
    return db;
}

static void remove_temp_db(const char *path)
{
    char side[64];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

static void bench_pipeline(const pipeline_case *c)
{
    int32_t nlayers = c->p * c->v;
    pipe_layer *layers = calloc((size_t)nlayers, sizeof *layers);
    int32_t *partition = calloc((size_t)nlayers, sizeof *partition);
    double *rate = calloc((size_t)c->p, sizeof *rate);
    for (int32_t i = 0; i < nlayers; i++) {
        /* every optional field "not given": the backward is twice the
         * forward, unsplit, no recompute figures */
        pipe_layer_init(&layers[i]);
        layers[i].fwd_time = 1e-3;
        layers[i].params = 1e6;
        layers[i].act_bytes = 1e8;
        layers[i].out_bytes = 1e6;
        partition[i] = 1;
    }
    for (int32_t r = 0; r < c->p; r++)
        rate[r] = 1e15;
    net *nw = net_new(c->p);
    ps_err err;
    if (net_set_mesh(nw, 50e9, 5e-6, &err) || net_finalize(nw, &err))
        die(&err);
    pipe_config cfg = {.name = c->label,
                       .schedule = c->kind,
                       .schedule_name = sched_name(c->kind),
                       .p = c->p,
                       .v = c->v,
                       .m = c->m,
                       .p2p = ENG_RENDEZVOUS,
                       .record = REC_EVENTS,
                       .layers = layers,
                       .nlayers = nlayers,
                       .partition = partition,
                       .dp = 1,
                       .device_rate = rate,
                       .weight_bytes = 2,
                       .grad_bytes = 2,
                       .optimizer_bytes = 12};
    pipe_ctx *ctx = pipe_ctx_new();
    pipe_result res;
    double t_off[REPS], t_eng[REPS], t_on[REPS];

    /* whole step without recording: lowering + engine + statistics */
    for (int i = 0; i < REPS; i++) {
        double t0 = now();
        if (pipe_run(ctx, &cfg, nw, NULL, &res, &err))
            die(&err);
        t_off[i] = now() - t0;
    }
    int64_t events = res.eng.events, ops = res.eng.ops;

    /* the engine alone on the already lowered programs */
    sched_stage *st = calloc((size_t)nlayers, sizeof *st);
    for (int32_t s = 0; s < nlayers; s++)
        st[s] = (sched_stage){1e-3, 2e-3, 1e-3, 1e8, 1e6, 1e6, 0, 0};
    sched_spec spec = {
        .kind = c->kind, .p = c->p, .v = c->v, .m = c->m, .stages = st};
    prog_set *ps = prog_new(c->p);
    eng_sim *eng = eng_new();
    eng_result er;
    if (sched_lower(&spec, ps, &err) || prog_seal(ps, &err))
        die(&err);
    for (int i = 0; i < REPS; i++) {
        double t0 = now();
        if (eng_run(eng, ps, nw, ENG_RENDEZVOUS, &er, &err))
            die(&err);
        t_eng[i] = now() - t0;
    }

    /* full recording into a fresh database */
    char path[] = "/tmp/pipesim-bench-XXXXXX";
    rec_db *db = open_temp_db(path);
    int64_t rows = 0;
    for (int i = 0; i < REPS; i++) {
        double t0 = now();
        rec_sink sink;
        if (pipe_run(ctx, &cfg, nw, run_sink_db(&sink, db), &res, &err) ||
            rec_flush(db, &err))
            die(&err);
        t_on[i] = now() - t0;
    }
    rec_query *q =
        rec_query_new(db,
                      "SELECT (SELECT count(*) FROM event WHERE run = ?1) + "
                      "(SELECT count(*) FROM transfer WHERE run = ?1) + "
                      "(SELECT count(*) FROM memory WHERE run = ?1) + "
                      "(SELECT count(*) FROM stage WHERE run = ?1) + "
                      "(SELECT count(*) FROM rank_stat WHERE run = ?1) + 1",
                      &err);
    if (!q)
        die(&err);
    rec_query_bind_int(q, 1, res.id);
    if (rec_query_step(q, &err) == 1)
        rows = rec_query_int(q, 0);
    rec_query_free(q);
    rec_close(db, NULL);
    remove_temp_db(path);

    double off = median(t_off, REPS), eng_t = median(t_eng, REPS),
           on = median(t_on, REPS);
    printf("%-34s %9lld %9lld %9.1f %7.2f %9.1f %9lld %8.3f %9.2f\n", c->label,
           (long long)ops, (long long)events, 1e3 * off,
           (double)ops / off / 1e6, (double)events / eng_t / 1e6,
           (long long)rows, on, (double)rows / on / 1e6);
    eng_free(eng);
    prog_free(ps);
    free(st);
    pipe_ctx_free(ctx);
    net_free(nw);
    free(layers);
    free(partition);
    free(rate);
}

/* Ring allreduce of 1 GB on a FIFO mesh: the whole coll_run (programs,
 * engine, result) with recording off, and coll_run + rec_write at
 * REC_EVENTS (transfer and link rows, one commit) with it on. */
static void bench_allreduce(int32_t n, int reps)
{
    net *nw = net_new(n);
    eng_sim *eng = eng_new();
    prog_set *ps = prog_new(n);
    ps_err err;
    if (!nw || !eng || !ps || net_set_mesh(nw, 50e9, 5e-6, &err))
        die(&err);
    coll_spec spec = {.op = COLL_ALLREDUCE,
                      .algorithm = COLL_RING,
                      .bytes = 1000000000,
                      .p2p = ENG_RENDEZVOUS};
    coll_result res;
    double t_off[REPS], t_on[REPS];
    int64_t transfers = 0;
    double sim = 0;
    for (int i = 0; i < reps; i++) {
        double t0 = now();
        if (coll_run(&spec, nw, eng, ps, &res, &err))
            die(&err);
        t_off[i] = now() - t0;
        transfers = res.transfers;
        sim = res.time;
        coll_result_free(&res);
    }
    char path[] = "/tmp/pipesim-bench-XXXXXX";
    rec_db *db = open_temp_db(path);
    for (int i = 0; i < reps; i++) {
        double t0 = now();
        if (coll_run(&spec, nw, eng, ps, &res, &err))
            die(&err);
        rec_run run = {.kind = "collective",
                       .name = "ring allreduce",
                       .p2p = "rendezvous",
                       .makespan = res.time,
                       .bubble = NAN,
                       .closed_form_bubble = NAN,
                       .imbalance = NAN,
                       .peak_memory = NAN,
                       .status = "ok"};
        rec_collective row = {"allreduce", "ring",    n,         1e9,
                              res.time,    res.algbw, res.busbw, NULL};
        rec_payload pl = {
            .run = &run, .collective = &row, .progs = ps, .network = nw};
        int64_t id;
        if (rec_write(db, &pl, REC_EVENTS, &id, &err) || rec_flush(db, &err))
            die(&err);
        t_on[i] = now() - t0;
        coll_result_free(&res);
    }
    rec_close(db, NULL);
    remove_temp_db(path);
    double first = t_off[0]; /* a fresh process: pages not yet touched */
    double off = median(t_off, reps), on = median(t_on, reps);
    printf("%6d %10lld %10.3f %8.3f %8.3f %9.2f %8.3f %9.2f\n", (int)n,
           (long long)transfers, 1e3 * sim, first, off,
           (double)transfers / off / 1e6, on, (double)transfers / on / 1e6);
    prog_free(ps);
    eng_free(eng);
    net_free(nw);
}

/* What a sweep's recorder pays per run: rec_write of summary runs (the
 * run row, 4 stage and 4 rank_stat rows, as a 4-stage ps.run with record =
 * "summary" writes) into a fresh database, each run committed before
 * rec_write returns its id. */
static void bench_summary_writes(int32_t runs)
{
    rec_stage stages[4];
    rec_rank ranks[4];
    for (int32_t i = 0; i < 4; i++) {
        stages[i] = (rec_stage){.stage = i,
                                .rank = i,
                                .first_layer = 8 * i,
                                .last_layer = 8 * i + 7,
                                .fwd_flops = 1e12,
                                .params = 1e8,
                                .fwd_time = 1e-3,
                                .bwd_time = 2e-3,
                                .act_bytes = 1e8,
                                .out_bytes = 1e6,
                                .exposed_comm = NAN};
        ranks[i] = (rec_rank){.rank = i,
                              .busy = 0.8,
                              .bubble = 0.2,
                              .static_memory = 1e9,
                              .peak_memory = 2e9,
                              .t_peak = 0.5,
                              .exposed_comm = NAN,
                              .capacity = NAN,
                              .fits = REC_FITS_UNKNOWN};
    }
    rec_run r = {.kind = "pipeline",
                 .name = "sweep",
                 .schedule = "1f1b",
                 .p2p = "rendezvous",
                 .stages = 4,
                 .microbatches = 8,
                 .virtual_stages = 1,
                 .dp = 1,
                 .makespan = 1,
                 .bubble = 0.2,
                 .closed_form_bubble = NAN,
                 .imbalance = 1,
                 .peak_memory = 2e9,
                 .params_json = "{\"partition\":[8,8,9,9]}",
                 .status = "ok"};
    rec_payload p = {
        .run = &r, .stages = stages, .nstages = 4, .ranks = ranks, .nranks = 4};
    double t[REPS];
    ps_err err;
    for (int i = 0; i < REPS; i++) {
        char path[] = "/tmp/pipesim-bench-XXXXXX";
        rec_db *db = open_temp_db(path);
        int64_t id;
        double t0 = now();
        for (int32_t k = 0; k < runs; k++)
            if (rec_write(db, &p, REC_SUMMARY, &id, &err))
                die(&err);
        if (rec_close(db, &err))
            die(&err);
        t[i] = (now() - t0) / runs;
        remove_temp_db(path);
    }
    printf("%-34s %9d %9.1f %9.0f\n", "summary runs, 4 stages", runs,
           1e6 * median(t, REPS), 1.0 / median(t, REPS));
}

int main(void)
{
    static const pipeline_case cases[] = {
        {"1f1b p=8 m=64", SCHED_1F1B, 8, 1, 64},
        {"1f1b p=64 m=1024", SCHED_1F1B, 64, 1, 1024},
        {"interleaved p=64 v=4 m=1024", SCHED_INTERLEAVED, 64, 4, 1024},
    };
    printf("pipeline steps (median of %d; 'off' = recording off, 'on' = full "
           "event recording)\n",
           REPS);
    printf("%-34s %9s %9s %9s %7s %9s %9s %8s %9s\n", "case", "ops", "events",
           "off ms", "Mops/s", "Mev/s eng", "rows", "on s", "Mrows/s");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        bench_pipeline(&cases[i]);

    printf("\nring allreduce of 1 GB on a 50 GB/s, 5 us mesh (FIFO), median "
           "of %d; 'first' = the first run of the process\n",
           REPS);
    printf("%6s %10s %10s %8s %8s %9s %8s %9s\n", "ranks", "transfers",
           "sim ms", "first s", "off s", "Mxfer/s", "on s", "Mxfer/s");
    bench_allreduce(64, REPS);
    bench_allreduce(256, REPS);
    bench_allreduce(1024, REPS);

    printf("\nrecorder, summary level (median of %d, wall clock, including "
           "the commit of each run and closing the file)\n",
           REPS);
    printf("%-34s %9s %9s %9s\n", "case", "runs", "us/run", "runs/s");
    bench_summary_writes(5000);
    return 0;
}
