/* Recorder, the timeline's storage: the upgrade to rowid spans behind
 * views (schema 6), rows streamed from the engine's completion hook by the
 * writer thread (full disks, signals, checkpoints), and rows inserted in
 * blocks, each block all or nothing (the rest of the recorder:
 * test_rec.c).
 * Runs with cwd = a scratch directory (tests/run.sh). */
#include "rec/rec.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "harness.h"

/* fixture_scalar and fixture_text under the short names every test here
 * uses */
static double scalar(rec_db *db, const char *sql)
{
    return fixture_scalar(db, sql);
}

static const char *text(rec_db *db, const char *sql, char *buf, size_t size)
{
    return fixture_text(db, sql, buf, size);
}

/* Runs each statement of sql (NULL-terminated) on db; 1 when all ran. */
static int exec_each(rec_db *db, const char *const *sql)
{
    ps_err err;
    for (; *sql; sql++) {
        rec_query *q = rec_query_new(db, *sql, &err);
        int rc = q ? rec_query_step(q, &err) : PS_ERR;
        rec_query_free(q);
        if (rc == PS_ERR) {
            printf("%s: %s\n", *sql, err.msg);
            return 0;
        }
    }
    return 1;
}

/* Every timeline row of the file, in run and recording order, as text. */
#define DIGEST(cols, table)                                                    \
    "SELECT count(*) || ':' || group_concat(" cols ", ';') FROM (SELECT * "    \
    "FROM " table " ORDER BY run, rowid)"
static const char *const digests[] = {
    DIGEST("run||','||rank||','||kind||','||ifnull(stage,'-')||','||"
           "ifnull(chunk,'-')||','||ifnull(mb,'-')||','||t_start||','||t_end",
           "event"),
    DIGEST("run||','||src||','||dst||','||bytes||','||t_start||','||t_end||"
           "','||kind||','||ifnull(mb,'-')||','||ifnull(tag,'-')",
           "transfer"),
    DIGEST("run||','||rank||','||t||','||bytes", "memory"),
};

/* Version 6 keeps the timeline in rowid spans behind views: the views
 * read as the tables did, a summary run has no span, and a version 5
 * file (tables with a run column, here with the runs' rows out of run
 * order and a kind the kind tables do not know) is upgraded in place to
 * the same rows. */
static void test_timeline_upgrade(void)
{
    ps_err err = {0};
    rec_db *db = fixture_new_db("v5.db", &err);
    fixture fx;
    CHECK_INT(fixture_run(&fx, "1f1b", 3, 4, 1, 1.0, 2.0, 10.0, &err), 0);
    int64_t id = -1;
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 3);
    CHECK_INT(scalar(db, "SELECT count(*) FROM span"), 2);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 2"), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 3"), 24);
    CHECK_INT(scalar(db, "SELECT min(rowid) FROM event WHERE run = 3"), 25);
    CHECK_INT(scalar(db, "SELECT count(*) FROM transfer WHERE run = 3 AND "
                         "kind = 'act'"),
              8);
    static const char *const to_v5[] = {
        "CREATE TABLE ev5(run INTEGER NOT NULL, rank INTEGER NOT NULL, "
        "kind TEXT NOT NULL, stage INTEGER, chunk INTEGER, mb INTEGER, "
        "t_start REAL NOT NULL, t_end REAL NOT NULL)",
        "INSERT INTO ev5 SELECT run, rank, kind, stage, chunk, mb, t_start, "
        "t_end FROM event ORDER BY run DESC, rowid",
        "CREATE TABLE tr5(run INTEGER NOT NULL, src INTEGER NOT NULL, dst "
        "INTEGER NOT NULL, bytes REAL NOT NULL, t_start REAL NOT NULL, t_end "
        "REAL NOT NULL, kind TEXT NOT NULL, mb INTEGER, tag INTEGER)",
        "INSERT INTO tr5 SELECT run, src, dst, bytes, t_start, t_end, kind, "
        "mb, tag FROM transfer ORDER BY run DESC, rowid",
        "CREATE TABLE me5(run INTEGER NOT NULL, rank INTEGER NOT NULL, t REAL "
        "NOT NULL, bytes REAL NOT NULL)",
        "INSERT INTO me5 SELECT run, rank, t, bytes FROM memory ORDER BY run "
        "DESC, rowid",
        "UPDATE ev5 SET kind = 'ZZ' WHERE run = 1 AND rank = 0 AND mb = 0 AND "
        "kind = 'B'",
        "DROP VIEW event",
        "DROP VIEW transfer",
        "DROP VIEW memory",
        "DROP TABLE event_row",
        "DROP TABLE transfer_row",
        "DROP TABLE memory_row",
        "DROP TABLE span",
        "DROP TABLE event_kind",
        "DROP TABLE transfer_kind",
        "ALTER TABLE ev5 RENAME TO event",
        "ALTER TABLE tr5 RENAME TO transfer",
        "ALTER TABLE me5 RENAME TO memory",
        "CREATE INDEX event_run ON event(run)",
        "CREATE INDEX transfer_run ON transfer(run)",
        "CREATE INDEX memory_run ON memory(run)",
        "DROP TABLE rank_member",
        /* and without version 8's efficiency columns */
        "ALTER TABLE run DROP COLUMN model_flops",
        "ALTER TABLE run DROP COLUMN hardware_flops",
        "ALTER TABLE run DROP COLUMN tokens",
        "ALTER TABLE run DROP COLUMN gpus",
        "ALTER TABLE run DROP COLUMN peak_flops",
        "ALTER TABLE run DROP COLUMN precision",
        "ALTER TABLE run DROP COLUMN model_tflops_per_gpu",
        "ALTER TABLE run DROP COLUMN mfu",
        "ALTER TABLE run DROP COLUMN hardware_tflops_per_gpu",
        "ALTER TABLE run DROP COLUMN tokens_per_s_per_gpu",
        "ALTER TABLE run DROP COLUMN efficiency_note",
        /* and without version 10's live-mode columns and 11's folded */
        "ALTER TABLE run DROP COLUMN backend",
        "ALTER TABLE run DROP COLUMN simulated",
        "ALTER TABLE run DROP COLUMN folded",
        "PRAGMA user_version = 6",
        NULL,
    };
    CHECK(exec_each(db, to_v5));
    char before[3][8192], after[8192];
    for (int i = 0; i < 3; i++)
        text(db, digests[i], before[i], sizeof before[i]);
    CHECK_INT(rec_close(db, &err), 0);

    db = rec_open_read("v5.db", &err);
    CHECK(db == NULL);
    CHECK_HAS(err.msg, "schema version 6 (before the timeline's rowid "
                       "spans), this pipesim reads 11; writing one run to it "
                       "upgrades it in place");
    db = rec_open("v5.db", &err); /* the upgrade */
    CHECK(db != NULL);
    if (!db)
        printf("upgrade: %s\n", err.msg);
    if (!db) {
        fixture_free(&fx);
        return;
    }
    CHECK_INT(scalar(db, "PRAGMA user_version"), REC_SCHEMA_VERSION);
    /* version 8's efficiency columns, NULL for the old runs */
    CHECK_INT(scalar(db, "SELECT count(*) FROM pragma_table_info('run') "
                         "WHERE name IN ('model_flops', 'mfu', "
                         "'efficiency_note')"),
              3);
    CHECK_INT(scalar(db, "SELECT count(mfu) FROM run"), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM sqlite_master WHERE type = "
                         "'view' AND name IN ('event', 'transfer', 'memory')"),
              3);
    for (int i = 0; i < 3; i++) {
        CHECK_STR(text(db, digests[i], after, sizeof after), before[i]);
        CHECK(strlen(before[i]) > 100);
    }
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE kind = 'ZZ'"), 1);
    /* the upgraded file appends: the new run's rows are its own */
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 4);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 4"), 24);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event"), 3 * 24);
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory WHERE run = 1"),
              scalar(db, "SELECT count(*) FROM memory WHERE run = 4"));
    /* scripts still edit through the views: an INSERT extends the last
     * run's span, and one for an earlier run is refused */
    static const char *const edits[] = {
        "INSERT INTO event(run, rank, kind, stage, chunk, mb, t_start, t_end) "
        "VALUES (4, 0, 'W', 0, 0, 0, 40, 41)",
        "UPDATE event SET t_end = 42 WHERE run = 4 AND kind = 'W'",
        "DELETE FROM memory WHERE run = 1 AND rank = 2",
        NULL,
    };
    CHECK(exec_each(db, edits));
    CHECK_NEAR(scalar(db, "SELECT t_end FROM event WHERE run = 4 AND kind = "
                          "'W'"),
               42.0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 4"), 25);
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory WHERE run = 1 AND rank "
                         "= 2"),
              0);
    rec_query *q = rec_query_new(
        db,
        "INSERT INTO event(run, rank, kind, t_start, t_end) VALUES (1, 0, "
        "'F', 0, 1)",
        &err);
    CHECK(q != NULL);
    CHECK_INT(rec_query_step(q, &err), PS_ERR);
    CHECK_HAS(err.msg, "event: the rows of a run go in together");
    rec_query_free(q);
    CHECK_INT(rec_close(db, &err), 0);
    fixture_free(&fx);
}

/* The timeline streamed from the engine's completion hook (rec/stream.c)
 * holds the same rows as the one read back from the programs (in
 * completion order rather than lane order), with the same spans; a failed
 * run or a cancel drops the streamed rows and frees the lock. */
static void test_stream(void)
{
    ps_err err = {0};
    rec_db *db = fixture_new_db("stream.db", &err);
    fixture fx;
    CHECK_INT(fixture_run(&fx, "1f1b", 4, 8, 1, 1.0, 2.0, 100.0, &err), 0);
    int64_t id = -1;
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0); /* run 1 */
    eng_sim *e = eng_new();
    eng_sink sink;
    CHECK_INT(rec_stream_begin(db, &sink, &err), 0);
    eng_set_sink(e, &sink);
    eng_set_memory(e, fx.static_memory); /* the baselines of the rows */
    eng_result res;
    CHECK_INT(eng_run(e, fx.ps, fx.nw, ENG_EAGER, &res, &err), 0);
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 2);
    static const char *const same[] = {
        "SELECT count(*) FROM (SELECT rank, kind, stage, chunk, mb, t_start, "
        "t_end FROM event WHERE run = 1 EXCEPT SELECT rank, kind, stage, "
        "chunk, mb, t_start, t_end FROM event WHERE run = 2)",
        "SELECT count(*) FROM (SELECT src, dst, bytes, t_start, t_end, kind, "
        "mb, tag FROM transfer WHERE run = 2 EXCEPT SELECT src, dst, bytes, "
        "t_start, t_end, kind, mb, tag FROM transfer WHERE run = 1)",
        "SELECT count(*) FROM (SELECT rank, t, bytes FROM memory WHERE run = 1 "
        "EXCEPT SELECT rank, t, bytes FROM memory WHERE run = 2)",
    };
    for (int i = 0; i < 3; i++)
        CHECK_INT(scalar(db, same[i]), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 2"), 64);
    CHECK_INT(scalar(db, "SELECT count(*) FROM transfer WHERE run = 2"), 48);
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory WHERE run = 2"), 68);
    CHECK_INT(scalar(db, "SELECT event_first FROM span WHERE run = 2"), 65);
    /* memory rows from the engine's ledger: each rank's baseline first,
     * then its changes in time order, as mem_ledger has them */
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory m JOIN (SELECT rank, "
                         "min(rowid) AS first FROM memory WHERE run = 2 GROUP "
                         "BY rank) f ON m.rowid = f.first WHERE m.t <> 0"),
              0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory a JOIN memory b ON "
                         "a.run = 2 AND b.run = 2 AND a.rank = b.rank AND "
                         "a.rowid < b.rowid AND a.t > b.t"),
              0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM (SELECT a.rank, a.t, a.bytes, "
                         "(SELECT count(*) FROM memory c WHERE c.run = 1 AND "
                         "c.rank = a.rank AND c.rowid < a.rowid) FROM memory "
                         "a WHERE a.run = 1 EXCEPT SELECT b.rank, b.t, "
                         "b.bytes, (SELECT count(*) FROM memory d WHERE d.run "
                         "= 2 AND d.rank = b.rank AND d.rowid < b.rowid) FROM "
                         "memory b WHERE b.run = 2)"),
              0);
    /* completion order: each rank's events in time order */
    CHECK_INT(scalar(db, "SELECT count(*) FROM event a JOIN event b ON "
                         "a.run = 2 AND b.run = 2 AND a.rank = b.rank AND "
                         "a.rowid < b.rowid AND a.t_start > b.t_start"),
              0);

    /* a failed run drops what was streamed; a cancel too */
    CHECK_INT(rec_stream_begin(db, &sink, &err), 0);
    eng_set_sink(e, &sink);
    CHECK_INT(eng_run(e, fx.ps, fx.nw, ENG_EAGER, &res, &err), 0);
    fx.run.status = "failed";
    fx.run.error = "test";
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 3);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 3"), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event"), 128);
    fx.run.status = "ok";
    fx.run.error = NULL;
    CHECK_INT(rec_stream_begin(db, &sink, &err), 0);
    eng_set_sink(e, &sink);
    CHECK_INT(eng_run(e, fx.ps, fx.nw, ENG_EAGER, &res, &err), 0);
    rec_stream_cancel(db);
    rec_stream_cancel(db); /* nothing open: nothing happens */
    rec_db *other = rec_open("stream.db", &err); /* the lock is free */
    CHECK_INT(rec_write(other, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(id, 4);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event"), 128);
    CHECK_INT(scalar(db, "SELECT count(*) FROM span"), 2);
    rec_close(other, &err);
    eng_free(e);
    rec_close(db, &err);
    fixture_free(&fx);
}

/* A full disk while the writer thread inserts a streamed run's rows
 * (rec/writer.c): that run fails with the full-disk message, nothing of it
 * remains, and the run before it is kept. */
static void test_stream_full(void)
{
    ps_err err = {0};
    rec_db *db = fixture_new_db("full.db", &err);
    fixture fx;
    CHECK_INT(fixture_run(&fx, "1f1b", 4, 8, 1, 1.0, 2.0, 100.0, &err), 0);
    int64_t id = -1;
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    char cap[32];
    snprintf(cap, sizeof cap, "%lld",
             (long long)scalar(db, "PRAGMA page_count") + 8);
    rec_close(db, &err);
    setenv("PIPESIM_TEST_MAX_PAGES", cap, 1);
    db = rec_open("full.db", &err);
    unsetenv("PIPESIM_TEST_MAX_PAGES");
    eng_sim *e = eng_new();
    eng_sink sink;
    CHECK_INT(rec_stream_begin(db, &sink, &err), 0);
    eng_set_sink(e, &sink);
    eng_result res;
    /* 50 x 180 rows in one run: more than 8 pages */
    for (int i = 0; i < 50; i++)
        CHECK_INT(eng_run(e, fx.ps, fx.nw, ENG_EAGER, &res, &err), 0);
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), PS_ERR);
    CHECK_INT(id, 0);
    CHECK_HAS(err.msg, "full.db: run not recorded: database or disk is full "
                       "(runs recorded before are kept)");
    CHECK_INT(scalar(db, "SELECT count(*) FROM run"), 1);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event_row"), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM span"), 0);
    eng_free(e);
    rec_close(db, &err);
    fixture_free(&fx);
}

/* The writer thread blocks every signal (rec/writer.c), so SIGINT,
 * SIGTERM and SIGALRM go to the engine's thread: each thread's mask from
 * /proc (Linux; elsewhere nothing is checked). */
static void test_writer_signals(void)
{
    ps_err err = {0};
    rec_db *db = fixture_new_db("sig.db", &err);
    eng_sink sink;
    CHECK_INT(rec_stream_begin(db, &sink, &err), 0);
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        fclose(f);
        int main_blocks = -1, others_blocking = 0;
        DIR *d = opendir("/proc/self/task");
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.')
                continue;
            char path[288], line[256];
            snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
            FILE *t = fopen(path, "r");
            unsigned long long mask = 0;
            while (t && fgets(line, sizeof line, t))
                if (sscanf(line, "SigBlk: %llx", &mask) == 1)
                    break;
            if (t)
                fclose(t);
            unsigned long long want = 1ull << (SIGINT - 1) |
                                      1ull << (SIGTERM - 1) |
                                      1ull << (SIGALRM - 1);
            if (atol(e->d_name) == (long)getpid())
                main_blocks = (mask & want) == want;
            else
                others_blocking += (mask & want) == want;
        }
        if (d)
            closedir(d);
        CHECK_INT(main_blocks, 0);
        CHECK(others_blocking >= 1); /* the writer */
    }
    rec_stream_cancel(db);
    rec_close(db, &err);
}

/* A streamed run whose log passes the checkpoint size (lowered to 100
 * frames here): the checkpoint runs on the writer thread's own connection
 * after the commit (rec/txn.c, wal_hook) while the next run streams; every
 * row is in, and the database file holds the first run once the second
 * is committed. */
static void test_stream_checkpoint(void)
{
    ps_err err = {0};
    unlink("ckpt.db");
    setenv("PIPESIM_TEST_CKPT_FRAMES", "100", 1);
    rec_db *db = rec_open("ckpt.db", &err);
    unsetenv("PIPESIM_TEST_CKPT_FRAMES");
    fixture fx;
    CHECK_INT(fixture_run(&fx, "1f1b", 4, 8, 1, 1.0, 2.0, 100.0, &err), 0);
    eng_sim *e = eng_new();
    eng_sink sink;
    eng_result res;
    int64_t id = 0;
    struct stat sb;
    for (int run = 1; run <= 2; run++) {
        CHECK_INT(rec_stream_begin(db, &sink, &err), 0);
        eng_set_sink(e, &sink);
        /* run 1: 36,000 rows, about 150 pages; run 2: 180 */
        for (int i = 0; i < (run == 1 ? 200 : 1); i++)
            CHECK_INT(eng_run(e, fx.ps, fx.nw, ENG_EAGER, &res, &err), 0);
        CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
        CHECK_INT(id, run);
    }
    /* run 2 waited for run 1's checkpoint (rec_writer_drain) */
    CHECK(stat("ckpt.db", &sb) == 0 && sb.st_size > 100 * 4096);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 1"), 200 * 64);
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory"), 201 * 68);
    eng_free(e);
    rec_close(db, &err);
    fixture_free(&fx);
}

/* The timeline's rows go in by blocks of REC_ROWS through the
 * pipesim_rows virtual table (rec/rows.c): a streamed run of several
 * blocks and a partial one, and a stored run whose indexes are -1 (NULL
 * in the views), give the same rows from the writer thread and with
 * PIPESIM_REC_THREAD=0, each table's span is its contiguous rowids, and
 * nothing of pipesim_rows reaches the file or another connection. */
static void test_rows_blocks(void)
{
    static char got[2][3][1 << 17];
    fixture fx;
    ps_err err = {0};
    CHECK_INT(fixture_run(&fx, "1f1b", 4, 8, 1, 1.0, 2.0, 100.0, &err), 0);
    /* the first compute and send of rank 0: no stage, chunk, mb, tag */
    const prog_lane *lane = &fx.ps->lanes[0];
    int marked = 0;
    for (int32_t i = 0; i < lane->n && marked != 3; i++) {
        prog_op *op = &lane->ops[i];
        if (op->type == PROG_COMPUTE && !(marked & 1)) {
            op->stage = -1;
            op->chunk = -1;
            op->mb = -1;
            marked |= 1;
        } else if (op->type == PROG_SEND && !(marked & 2)) {
            op->tag = -1;
            op->mb = -1;
            marked |= 2;
        }
    }
    CHECK_INT(marked, 3);
    eng_sim *e = eng_new();
    for (int mode = 0; mode < 2; mode++) {
        const char *path = mode ? "blocks1.db" : "blocks0.db";
        unlink(path);
        if (mode)
            setenv("PIPESIM_REC_THREAD", "0", 1);
        rec_db *db = rec_open(path, &err);
        int64_t id = 0;
        eng_sink sink;
        eng_result res;
        CHECK_INT(rec_stream_begin(db, &sink, &err), 0);
        eng_set_sink(e, &sink);
        eng_set_memory(e, fx.static_memory);
        /* 9 x (64 events, 48 transfers, 68 memory rows): 576, 432 and 612,
         * each table past one block and ending in a partial one */
        for (int i = 0; i < 9; i++)
            CHECK_INT(eng_run(e, fx.ps, fx.nw, ENG_EAGER, &res, &err), 0);
        CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
        CHECK_INT(id, 1);
        /* the writer thread's rows (rec_bench's critical path), none
         * when they were inserted on this thread */
        int64_t wrows = -1;
        double wcpu = -1;
        rec_writer_usage(db, &wrows, &wcpu);
        CHECK_INT(wrows, mode ? 0 : 576 + 432 + 612);
        CHECK(mode ? wcpu == 0 : wcpu > 0);
        eng_set_sink(e, NULL);
        CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
        CHECK_INT(id, 2);
        unsetenv("PIPESIM_REC_THREAD");
        CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 1"), 576);
        CHECK_INT(scalar(db, "SELECT count(*) FROM transfer WHERE run = 1"),
                  432);
        CHECK_INT(scalar(db, "SELECT count(*) FROM memory WHERE run = 1"), 612);
        /* 9 in the streamed run, 1 in the stored one */
        CHECK_INT(scalar(db, "SELECT sum(run = 1) * 10 + sum(run = 2) FROM "
                             "event WHERE stage IS NULL AND chunk IS NULL AND "
                             "mb IS NULL"),
                  91);
        CHECK_INT(scalar(db, "SELECT sum(run = 1) * 10 + sum(run = 2) FROM "
                             "transfer WHERE tag IS NULL AND mb IS NULL"),
                  91);
        CHECK_INT(scalar(db, "SELECT count(*) FROM span WHERE event_last - "
                             "event_first + 1 IS (SELECT count(*) FROM event "
                             "e WHERE e.run = span.run) AND transfer_last - "
                             "transfer_first + 1 IS (SELECT count(*) FROM "
                             "transfer x WHERE x.run = span.run) AND "
                             "memory_last - memory_first + 1 IS (SELECT "
                             "count(*) FROM memory m WHERE m.run = span.run)"),
                  2);
        CHECK_INT(scalar(db, "SELECT max(rowid) FROM event_row"), 576 + 64);
        CHECK_INT(scalar(db, "SELECT count(*) FROM sqlite_schema WHERE sql "
                             "LIKE '%pipesim_rows%'"),
                  0);
        for (int i = 0; i < 3; i++)
            text(db, digests[i], got[mode][i], sizeof got[mode][i]);
        rec_close(db, &err);
        /* a reader's connection has no such table */
        db = rec_open_read(path, &err);
        CHECK(rec_query_new(db, "SELECT * FROM pipesim_rows", &err) == NULL);
        CHECK_HAS(err.msg, "no such table: pipesim_rows");
        rec_close(db, &err);
    }
    for (int i = 0; i < 3; i++) {
        CHECK(strlen(got[0][i]) > 1000);
        CHECK_STR(got[1][i], got[0][i]);
    }
    eng_free(e);
    fixture_free(&fx);
}

/* A row SQLite refuses (a NaN time is stored as NULL, and t_end is NOT
 * NULL) fails its run with the constraint's message. The timeline's
 * INSERTs are OR FAIL (rec/rec.c: no statement journal), so the rows of the
 * block before that row are in until the run is taken back: nothing of
 * the failed run remains, alone or in a batch, and the runs before it in
 * the same batch are kept. */
static void test_rows_fail_atomic(void)
{
    ps_err err = {0};
    rec_db *db = fixture_new_db("rowfail.db", &err);
    fixture fx;
    CHECK_INT(fixture_run(&fx, "1f1b", 4, 8, 1, 1.0, 2.0, 100.0, &err), 0);
    int64_t id = -1;
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 1);
    /* the 40th of the 64 events: 39 rows of its block go in first */
    prog_op *bad = NULL;
    int k = 0;
    for (int32_t l = 0; l < fx.ps->nlanes && !bad; l++)
        for (int32_t i = 0; i < fx.ps->lanes[l].n && !bad; i++)
            if (fx.ps->lanes[l].ops[i].type == PROG_COMPUTE && ++k == 40)
                bad = &fx.ps->lanes[l].ops[i];
    CHECK(bad != NULL);
    double t_end = bad->t_end;
    for (int batch = 0; batch < 2; batch++) {
        rec_set_batch(db, batch);
        if (batch) /* a good run first in the batch: it stays */
            CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
        bad->t_end = NAN;
        CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), PS_ERR);
        CHECK_HAS(err.msg, "rowfail.db: run not recorded: NOT NULL "
                           "constraint failed: event_row.t_end");
        bad->t_end = t_end;
        CHECK_INT(rec_flush(db, &err), 0);
        CHECK_INT(scalar(db, "SELECT count(*) FROM event_row"), 64);
        CHECK_INT(scalar(db, "SELECT count(*) FROM transfer_row"), 48);
        CHECK_INT(scalar(db, "SELECT count(*) FROM memory_row"), 68);
        CHECK_INT(scalar(db, "SELECT count(*) FROM span"), 1);
        CHECK_INT(scalar(db, "SELECT count(*) FROM run"), 1 + batch);
    }
    /* the next run appends right after run 1's rows */
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(rec_flush(db, &err), 0);
    CHECK_INT(scalar(db, "SELECT max(event_first) FROM span"), 65);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = (SELECT "
                         "max(run) FROM span)"),
              64);
    rec_close(db, &err);
    fixture_free(&fx);
}

int main(void)
{
    test_timeline_upgrade();
    test_stream();
    test_stream_full();
    test_writer_signals();
    test_stream_checkpoint();
    test_rows_blocks();
    test_rows_fail_atomic();
    return harness_done();
}
