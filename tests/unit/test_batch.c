/* The recorder's batch mode (rec_set_batch, ps.sweep's runs): batched runs
 * are invisible to other connections until the batch commits (flush, a
 * write with the mode off, a copy's rec_begin, close), each run stays
 * atomic, a failed run leaves the batch's earlier runs committed, and
 * event-level runs (streamed or not) keep their spans; a batch SQLite rolls
 * back itself is counted as lost (rec_lost_runs) and said in the message.
 * Runs with cwd = a scratch directory (tests/run.sh). */
#include "rec/rec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fixture.h"
#include "harness.h"
#include "sim/eng.h"

static double seen(rec_db *rd)
{
    return fixture_scalar(rd, "SELECT count(*) FROM run");
}

static void test_visibility(void)
{
    ps_err err = {0};
    rec_db *db = fixture_new_db("batch.db", &err);
    rec_db *rd = rec_open_read("batch.db", &err);
    CHECK(db != NULL && rd != NULL);
    fixture fx;
    CHECK_INT(fixture_run(&fx, "1f1b", 3, 4, 1, 1.0, 2.0, 10.0, &err), 0);
    int64_t id = 0;
    rec_set_batch(db, 1);
    for (int i = 1; i <= 5; i++) {
        CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
        CHECK_INT(id, i);
    }
    CHECK_INT(seen(rd), 0); /* the batch is open */
    CHECK_INT(fixture_scalar(db, "SELECT count(*) FROM run"),
              5); /* its own view */
    /* a write with the mode off commits the batch, then itself */
    rec_set_batch(db, 0);
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(seen(rd), 6);
    /* flush commits */
    rec_set_batch(db, 1);
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(seen(rd), 6);
    CHECK_INT(rec_flush(db, &err), 0);
    CHECK_INT(seen(rd), 8);
    CHECK_INT(fixture_scalar(rd, "SELECT count(*) FROM span WHERE run = 7"), 1);
    CHECK_INT(fixture_scalar(rd, "SELECT count(*) FROM event WHERE run = 7"),
              24);

    /* a run that fails half way (a duplicate rank) leaves nothing, and the
     * batch's earlier run is committed at once */
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(id, 9);
    rec_rank dup[4];
    fixture_dup_rank(&fx, dup);
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), PS_ERR);
    CHECK_INT(id, 0);
    CHECK_STR(err.msg, "batch.db: run not recorded: UNIQUE constraint "
                       "failed: rank_stat.run, rank_stat.rank");
    CHECK_INT(seen(rd), 9);
    CHECK_INT(fixture_scalar(rd, "SELECT count(*) FROM event WHERE run > 9"),
              0);
    fixture_ranks_back(&fx);
    /* the batch goes on after the failure; close commits it */
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 10);
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(seen(rd), 9);
    CHECK_INT(rec_close(db, &err), 0);
    CHECK_INT(seen(rd), 11);
    CHECK_INT(fixture_scalar(rd, "SELECT count(*) FROM event WHERE run = 10"),
              24);
    CHECK_INT(rec_close(rd, &err), 0);
    fixture_free(&fx);
}

/* Streamed event rows (rec_stream_begin) inside a batch: a cancelled
 * stream drops its run only. */
static void test_stream_in_batch(void)
{
    ps_err err = {0};
    rec_db *db = fixture_new_db("bstream.db", &err);
    fixture fx;
    CHECK_INT(fixture_run(&fx, "gpipe", 2, 2, 1, 1.0, 2.0, 10.0, &err), 0);
    int64_t id = 0;
    rec_set_batch(db, 1);
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    eng_sink sink;
    CHECK_INT(rec_stream_begin(db, &sink, &err), 0);
    rec_stream_cancel(db); /* a run cut short */
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 2);
    CHECK_INT(rec_flush(db, &err), 0);
    CHECK_INT(fixture_scalar(db, "SELECT count(*) FROM run"), 2);
    CHECK_INT(fixture_scalar(db, "SELECT count(*) FROM span"), 1);
    CHECK_INT(rec_close(db, &err), 0);
    fixture_free(&fx);
}

/* SQLite rolling a whole batch back itself, as a full disk or an I/O error
 * can (here a trigger's RAISE(ROLLBACK), which does so every time): the
 * failing run's message says how many of the batch's runs are lost,
 * rec_lost_runs counts them (the runs bind_finish takes off "N runs
 * added"), and the runs after it are kept. */
static void test_batch_lost(void)
{
    ps_err err = {0};
    rec_db *db = fixture_new_db("lost.db", &err);
    CHECK(db != NULL);
    fixture fx;
    CHECK_INT(fixture_run(&fx, "1f1b", 3, 4, 1, 1.0, 2.0, 10.0, &err), 0);
    int64_t id = 0;
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    sqlite3 *c = NULL;
    CHECK_INT(sqlite3_open("lost.db", &c), SQLITE_OK);
    CHECK_INT(sqlite3_exec(c,
                           "CREATE TRIGGER boom AFTER INSERT ON run "
                           "WHEN NEW.name = 'boom' "
                           "BEGIN SELECT RAISE(ROLLBACK, 'simulated'); END",
                           NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_close(c);
    rec_set_batch(db, 1);
    for (int i = 0; i < 3; i++)
        CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(rec_lost_runs(db), 0);
    fx.run.name = "boom";
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), PS_ERR);
    CHECK_INT(id, 0);
    CHECK_STR(err.msg, "lost.db: run not recorded: simulated (the sweep's "
                       "last 3 runs are lost)");
    CHECK_INT(rec_lost_runs(db), 3);
    fx.run.name = "1f1b";
    for (int i = 0; i < 2; i++)
        CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(rec_flush(db, &err), 0);
    CHECK_INT(rec_lost_runs(db), 3);
    CHECK_INT(fixture_scalar(db, "SELECT count(*) FROM run"), 3);
    CHECK_INT(rec_close(db, &err), 0);
    fixture_free(&fx);
}

/* A batch's stage and rank_stat rows are kept in memory and inserted at
 * its commit (rec/sum.c): the same rows and rowids as runs written one by
 * one, and a run rolled back after its rows were kept leaves none of them
 * (its id is given again to the next run: a kept row would break the
 * primary key at the commit). */
static void test_kept_rows(void)
{
    ps_err err = {0};
    rec_db *one = fixture_new_db("kept1.db", &err);
    rec_db *db = fixture_new_db("kept.db", &err);
    CHECK(one != NULL && db != NULL);
    fixture fx;
    CHECK_INT(fixture_run(&fx, "1f1b", 3, 4, 1, 1.0, 2.0, 10.0, &err), 0);
    /* integers and reals, some NULL */
    fx.ranks[0].fits = REC_FITS_YES;
    fx.ranks[1].fits = REC_FITS_UNKNOWN;
    fx.ranks[2].fits = REC_FITS_NO;
    fx.ranks[0].exposed_comm = 0.5;
    fx.ranks[1].exposed_comm = fx.ranks[2].exposed_comm = NAN;
    int64_t id = 0;
    for (int i = 0; i < 3; i++)
        CHECK_INT(rec_write(one, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(rec_close(one, &err), 0);
    sqlite3 *c = NULL;
    CHECK_INT(sqlite3_open("kept.db", &c), SQLITE_OK);
    CHECK_INT(sqlite3_exec(c,
                           "CREATE TRIGGER boom BEFORE INSERT ON span "
                           "WHEN NEW.run = 2 "
                           "BEGIN SELECT RAISE(ABORT, 'simulated'); END",
                           NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_close(c);
    rec_set_batch(db, 1);
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    /* run 2's stage and rank rows are kept, then its span fails */
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), PS_ERR);
    CHECK_STR(err.msg, "kept.db: run not recorded: simulated");
    for (int i = 0; i < 2; i++)
        CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(id, 3);
    CHECK_INT(rec_close(db, &err), 0);
    CHECK_INT(sqlite3_open("kept.db", &c), SQLITE_OK);
    CHECK_INT(sqlite3_exec(c, "ATTACH 'kept1.db' AS o", NULL, NULL, NULL),
              SQLITE_OK);
    rec_db *rd = rec_open_read("kept.db", &err);
    CHECK(rd != NULL);
    CHECK_INT(fixture_scalar(rd, "SELECT count(*) FROM stage"), 9);
    CHECK_INT(fixture_scalar(rd, "SELECT count(*) FROM rank_stat"), 9);
    CHECK_INT(fixture_scalar(rd, "SELECT sum(fits IS NULL) * 100 + "
                                 "sum(fits = 1) * 10 + sum(fits = 0) "
                                 "FROM rank_stat"),
              333);
    CHECK_INT(fixture_scalar(rd, "SELECT sum(exposed_comm IS NULL) FROM "
                                 "rank_stat"),
              6);
    CHECK_INT(rec_close(rd, &err), 0);
    sqlite3_stmt *st = NULL;
    CHECK_INT(sqlite3_prepare_v2(
                  c,
                  "SELECT (SELECT count(*) FROM (SELECT rowid, * FROM stage "
                  "EXCEPT SELECT rowid, * FROM o.stage)), (SELECT count(*) "
                  "FROM (SELECT rowid, * FROM rank_stat EXCEPT SELECT "
                  "rowid, * FROM o.rank_stat))",
                  -1, &st, NULL),
              SQLITE_OK);
    CHECK_INT(sqlite3_step(st), SQLITE_ROW);
    CHECK_INT(sqlite3_column_int(st, 0), 0); /* rows and rowids alike */
    CHECK_INT(sqlite3_column_int(st, 1), 0);
    sqlite3_finalize(st);
    sqlite3_close(c);
    fixture_free(&fx);
}

int main(void)
{
    test_kept_rows();
    test_visibility();
    test_stream_in_batch();
    test_batch_lost();
    return harness_done();
}
