/* The recorder's batch mode (rec_set_batch, ps.sweep's runs): batched runs
 * are invisible to other connections until the batch commits (flush, a
 * write with the mode off, a copy's rec_begin, close), each run stays
 * atomic, a failed run leaves the batch's earlier runs committed, and
 * event-level runs (streamed or not) keep their spans.
 * Runs with cwd = a scratch directory (tests/run.sh). */
#include "rec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "eng.h"
#include "fixture.h"
#include "harness.h"

static double scalar(rec_db *db, const char *sql)
{
    ps_err err;
    rec_query *q = rec_query_new(db, sql, &err);
    if (!q)
        return NAN;
    double v = rec_query_step(q, &err) == 1 ? rec_query_double(q, 0) : NAN;
    rec_query_free(q);
    return v;
}

static double seen(rec_db *rd)
{
    return scalar(rd, "SELECT count(*) FROM run");
}

static void test_visibility(void)
{
    ps_err err = {0};
    unlink("batch.db");
    rec_db *db = rec_open("batch.db", &err);
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
    CHECK_INT(scalar(db, "SELECT count(*) FROM run"), 5); /* its own view */
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
    CHECK_INT(scalar(rd, "SELECT count(*) FROM span WHERE run = 7"), 1);
    CHECK_INT(scalar(rd, "SELECT count(*) FROM event WHERE run = 7"), 24);

    /* a run that fails half way (a duplicate rank) leaves nothing, and the
     * batch's earlier run is committed at once */
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(id, 9);
    rec_rank dup[4];
    memcpy(dup, fx.ranks, 3 * sizeof dup[0]);
    dup[3] = dup[1];
    fx.pay.ranks = dup;
    fx.pay.nranks = 4;
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), PS_ERR);
    CHECK_INT(id, 0);
    CHECK_STR(err.msg, "batch.db: run not recorded: UNIQUE constraint "
                       "failed: rank_stat.run, rank_stat.rank");
    CHECK_INT(seen(rd), 9);
    CHECK_INT(scalar(rd, "SELECT count(*) FROM event WHERE run > 9"), 0);
    fx.pay.ranks = fx.ranks;
    fx.pay.nranks = 3;
    /* the batch goes on after the failure; close commits it */
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 10);
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(seen(rd), 9);
    CHECK_INT(rec_close(db, &err), 0);
    CHECK_INT(seen(rd), 11);
    CHECK_INT(scalar(rd, "SELECT count(*) FROM event WHERE run = 10"), 24);
    CHECK_INT(rec_close(rd, &err), 0);
    fixture_free(&fx);
}

/* Streamed event rows (rec_stream_begin) inside a batch: a cancelled
 * stream drops its run only. */
static void test_stream_in_batch(void)
{
    ps_err err = {0};
    unlink("bstream.db");
    rec_db *db = rec_open("bstream.db", &err);
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
    CHECK_INT(scalar(db, "SELECT count(*) FROM run"), 2);
    CHECK_INT(scalar(db, "SELECT count(*) FROM span"), 1);
    CHECK_INT(rec_close(db, &err), 0);
    fixture_free(&fx);
}

int main(void)
{
    test_visibility();
    test_stream_in_batch();
    return harness_done();
}
