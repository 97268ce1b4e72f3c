/* make bench, the recorder (issue 12): what one summary run costs a fresh
 * process (open a new or an existing file, write, count the runs as
 * `pipesim run` does, close), and full event recording's rows per second and
 * database bytes per timeline row (event + transfer + memory).
 * Medians of several repetitions in this one process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "net/net.h"
#include "step/pipe.h"
#include "rec/rec.h"
#include "run/sink.h"
#include "sched/sched.h"

#include "bench_util.h"

#define REPS 7

static void die(const ps_err *err)
{
    fprintf(stderr, "rec_bench: %s\n", err->msg);
    exit(1);
}

static void remove_db(const char *path)
{
    char side[128];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

static double file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (double)sb.st_size : 0;
}

static int64_t count(rec_db *db, const char *sql, int64_t run)
{
    ps_err err;
    rec_query *q = rec_query_new(db, sql, &err);
    if (!q)
        die(&err);
    rec_query_bind_int(q, 1, run);
    int64_t n = rec_query_step(q, &err) == 1 ? rec_query_int(q, 0) : -1;
    rec_query_free(q);
    return n;
}

/* One 4-stage summary run as a sweep writes it. */
static void summary_payload(rec_payload *p, rec_run *r, rec_stage *stages,
                            rec_rank *ranks)
{
    for (int32_t i = 0; i < 4; i++) {
        stages[i] = (rec_stage){i,   i,   0,   8 * i, 8 * i + 7, 1e12, 1e8,
                                0.1, 0.2, 1e9, 1e6, NAN,       0,    0};
        ranks[i] = (rec_rank){i,   0.8, 0.2, 1e9, 2e9, 0.5, NAN, NAN,
                              0, 0,   0};
    }
    *r = (rec_run){.kind = "pipeline",
                   .name = "bench",
                   .schedule = "1f1b",
                   .p2p = "rendezvous",
                   .stages = 4,
                   .microbatches = 8,
                   .virtual_stages = 1,
                   .dp = 1,
                   .tp = 1,
                   .recompute = "none",
                   .makespan = 1.0,
                   .bubble = 0.2,
                   .closed_form_bubble = 0.2,
                   .imbalance = 1.0,
                   .peak_memory = 2e9,
                   .params_json = "{\"stages\": 4}",
                   .status = "ok"};
    *p = (rec_payload){.run = r,
                       .stages = stages,
                       .nstages = 4,
                       .ranks = ranks,
                       .nranks = 4};
}

/* open + write + count + close: what `pipesim run` does for a scenario of
 * one summary run, on a new file (fresh) or an existing one; the count of
 * the file's runs for its summary line is made on the open connection
 * before the close (bind_finish), not by reopening the file. */
static void bench_fixed(int fresh)
{
    char path[] = "/tmp/pipesim-recbench-fixed.db";
    rec_payload p;
    rec_run r;
    rec_stage stages[4];
    rec_rank ranks[4];
    summary_payload(&p, &r, stages, ranks);
    double t_open[REPS], t_write[REPS], t_close[REPS], t_count[REPS],
        t_all[REPS];
    ps_err err;
    remove_db(path);
    for (int i = 0; i < REPS; i++) {
        if (fresh)
            remove_db(path);
        double t0 = now();
        rec_db *db = rec_open(path, &err);
        if (!db)
            die(&err);
        double t1 = now();
        int64_t id, n;
        if (rec_write(db, &p, REC_SUMMARY, &id, &err))
            die(&err);
        double t2 = now();
        if (rec_run_count(db, &n, &err))
            die(&err);
        double t3 = now();
        if (rec_close(db, &err))
            die(&err);
        double t4 = now();
        t_open[i] = t1 - t0;
        t_write[i] = t2 - t1;
        t_count[i] = t3 - t2;
        t_close[i] = t4 - t3;
        t_all[i] = t4 - t0;
    }
    remove_db(path);
    printf("%-28s %8.2f %8.2f %8.2f %8.2f %8.2f\n",
           fresh ? "summary run, new file" : "summary run, existing file",
           1e3 * median(t_open, REPS), 1e3 * median(t_write, REPS),
           1e3 * median(t_count, REPS), 1e3 * median(t_close, REPS),
           1e3 * median(t_all, REPS));
}

static void sql_die(sqlite3 *c, const char *what)
{
    fprintf(stderr, "rec_bench: %s: %s\n", what, sqlite3_errmsg(c));
    exit(1);
}

/* SQLite alone, for the same rows: the recorded file's three timeline
 * tables copied into twins of the same declaration inside one
 * transaction, then rolled back. WHERE defeats SQLite's transfer
 * optimization (which copies records without decoding them), so every
 * row is read, its record built and appended as an INSERT does: SQLite's
 * own insert rate for this row shape on this machine, without pipesim,
 * the virtual table or a second thread. Returns the seconds (wall, and
 * CPU in *cpu_s) and the rows. */
static int64_t sqlite_alone(const char *path, double *wall_s, double *cpu_s)
{
    static const char *const tables[] = {"event_row", "transfer_row",
                                         "memory_row"};
    sqlite3 *c = NULL;
    if (sqlite3_open_v2(path, &c, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        sql_die(c, path);
    if (sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        sql_die(c, "begin");
    char sql[1024];
    for (int i = 0; i < 3; i++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(c,
                               "SELECT substr(sql, 14) FROM sqlite_master "
                               "WHERE name = ?1",
                               -1, &st, NULL) != SQLITE_OK)
            sql_die(c, "schema");
        sqlite3_bind_text(st, 1, tables[i], -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_ROW)
            sql_die(c, tables[i]);
        /* "CREATE TABLE " is 13 characters: the twin is bench_NAME(...) */
        snprintf(sql, sizeof sql, "CREATE TABLE bench_%s",
                 (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        if (sqlite3_exec(c, sql, NULL, NULL, NULL) != SQLITE_OK)
            sql_die(c, sql);
    }
    int64_t rows = 0;
    double t0 = now(), c0 = cpu();
    for (int i = 0; i < 3; i++) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO bench_%s SELECT * FROM %s WHERE rowid > 0",
                 tables[i], tables[i]);
        if (sqlite3_exec(c, sql, NULL, NULL, NULL) != SQLITE_OK)
            sql_die(c, sql);
        rows += sqlite3_changes(c);
    }
    *wall_s = now() - t0;
    *cpu_s = cpu() - c0;
    sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(c);
    return rows;
}

/* A 1F1B step with full recording: rows per second of the recording alone
 * (the step with a database minus the step without) and database bytes per
 * timeline row, the file checkpointed and closed. */
static void bench_events(int32_t p, int32_t m)
{
    int32_t nlayers = p;
    pipe_layer *layers = calloc((size_t)nlayers, sizeof *layers);
    int32_t *partition = calloc((size_t)nlayers, sizeof *partition);
    double *rate = calloc((size_t)p, sizeof *rate);
    for (int32_t i = 0; i < nlayers; i++) {
        /* every optional field "not given", as bench.c's layers */
        pipe_layer_init(&layers[i]);
        layers[i].fwd_time = 1e-3;
        layers[i].params = 1e6;
        layers[i].act_bytes = 1e8;
        layers[i].out_bytes = 1e6;
        partition[i] = 1;
    }
    for (int32_t r = 0; r < p; r++)
        rate[r] = 1e15;
    net *nw = net_new(p);
    ps_err err;
    if (net_set_mesh(nw, 50e9, 5e-6, &err) || net_finalize(nw, &err))
        die(&err);
    pipe_config cfg = {.name = "bench",
                       .schedule = SCHED_1F1B,
                       .schedule_name = "1f1b",
                       .p = p,
                       .v = 1,
                       .m = m,
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
    double t_off[REPS], t_on[REPS], c_off[REPS], c_on[REPS], bytes[REPS],
        writer[REPS], t_sql[REPS], c_sql[REPS];
    int64_t rows = 0;
    const char *path = "/tmp/pipesim-recbench-events.db";
    /* a new file appears with its first run (rec/txn.c), so the empty
     * schema's bytes are those of a new file closed without a run */
    const char *empty_path = "/tmp/pipesim-recbench-empty.db";
    remove_db(empty_path);
    rec_db *edb = rec_open(empty_path, &err);
    if (!edb || rec_close(edb, &err))
        die(&err);
    double empty = file_size(empty_path);
    remove_db(empty_path);
    for (int i = 0; i < REPS; i++) {
        double t0 = now(), c0 = cpu();
        if (pipe_run(ctx, &cfg, nw, NULL, &res, &err))
            die(&err);
        t_off[i] = now() - t0;
        c_off[i] = cpu() - c0;
    }
    for (int i = 0; i < REPS; i++) {
        remove_db(path);
        rec_db *db = rec_open(path, &err);
        if (!db)
            die(&err);
        double t0 = now(), c0 = cpu();
        rec_sink sink;
        if (pipe_run(ctx, &cfg, nw, run_sink_db(&sink, db), &res, &err))
            die(&err);
        t_on[i] = now() - t0;
        c_on[i] = cpu() - c0;
        int64_t wrows;
        double wcpu;
        rec_writer_usage(db, &wrows, &wcpu);
        writer[i] = wrows > 0 ? 1e9 * wcpu / (double)wrows : NAN;
        rec_close(db, NULL);
        db = rec_open_read(path, &err);
        if (!db)
            die(&err);
        rows = count(db, "SELECT count(*) FROM event WHERE run = ?1", res.id) +
               count(db, "SELECT count(*) FROM transfer WHERE run = ?1",
                     res.id) +
               count(db, "SELECT count(*) FROM memory WHERE run = ?1", res.id);
        rec_close(db, NULL);
        bytes[i] = file_size(path) - empty;
        int64_t n = sqlite_alone(path, &t_sql[i], &c_sql[i]);
        t_sql[i] = (double)n / t_sql[i];
        c_sql[i] = (double)n / c_sql[i];
    }
    remove_db(path);
    double off = median(t_off, REPS), on = median(t_on, REPS);
    double coff = median(c_off, REPS), con = median(c_on, REPS);
    printf("1f1b p=%d m=%-6d %10lld %9.3f %9.3f %9.2f %9.2f %9.2f %8.1f "
           "%8.0f\n",
           p, m, (long long)rows, off, on, (double)rows / on / 1e6,
           (double)rows / (on - off) / 1e6, (double)rows / (con - coff) / 1e6,
           median(bytes, REPS) / (double)rows, median(writer, REPS));
    printf("%-30s %29.2f %19.2f %17.0f\n", "SQLite alone, same rows",
           median(t_sql, REPS) / 1e6, median(c_sql, REPS) / 1e6,
           1e9 / median(c_sql, REPS));
    pipe_ctx_free(ctx);
    net_free(nw);
    free(layers);
    free(partition);
    free(rate);
}

int main(int argc, char **argv)
{
    int32_t m = argc > 1 ? atoi(argv[1]) : 1024;
    printf("recorder fixed cost, ms (median of %d)\n", REPS);
    printf("%-28s %8s %8s %8s %8s %8s\n", "case", "open", "write", "count",
           "close", "total");
    bench_fixed(1);
    bench_fixed(0);
    printf("\nfull event recording (median of %d; rows: event + transfer + "
           "memory; 'rec' = on - off, wall clock and process CPU time;\n"
           "'wr ns/r': the writer thread's CPU per row, the critical path; "
           "'SQLite alone': the\nsame rows copied table to table in one "
           "transaction, no pipesim, its wr ns/r on one thread)\n",
           REPS);
    printf("%-19s %10s %9s %9s %9s %9s %9s %8s %8s\n", "case", "rows",
           "off s", "on s", "Mrows/s", "rec Mr/s", "cpu Mr/s", "B/row",
           "wr ns/r");
    bench_events(64, m);
    return 0;
}
