/* Hand-edited databases: report and export check a run's rows before they
 * draw it (out/dbcheck.c) and name the first bad row in one line, and a huge
 * but finite makespan draws instead of hanging the report's axis loop.
 * The test edits the file with SQLite directly, as a user would. */
#include "out/dbcheck.h"
#include "out/export.h"
#include "out/report.h"

#include <sqlite3.h>
#include <stdio.h>
#include <unistd.h>

#include "fixture.h"
#include "harness.h"

#define DB "dbcheck.db"

/* A fresh database with one 1F1B run (4 ranks, 8 microbatches), then sql
 * applied to it; returns it opened read-only. */
static rec_db *tampered(const char *sql)
{
    ps_err err;
    fixture fx;
    int64_t id;
    unlink(DB);
    rec_db *db = rec_open(DB, &err);
    if (!db || fixture_run(&fx, "1f1b", 4, 8, 1, 1, 2, 1 << 20, &err) ||
        rec_write(db, &fx.pay, REC_EVENTS, &id, &err) || rec_close(db, &err))
        printf("fixture: %s\n", err.msg);
    fixture_free(&fx);
    sqlite3 *s;
    char *msg = NULL;
    if (sqlite3_open(DB, &s) != SQLITE_OK ||
        sqlite3_exec(s, sql, NULL, NULL, &msg) != SQLITE_OK)
        printf("tamper: %s\n", msg ? msg : sqlite3_errmsg(s));
    sqlite3_free(msg);
    sqlite3_close(s);
    db = rec_open_read(DB, &err);
    if (!db)
        printf("open: %s\n", err.msg);
    return db;
}

/* Every reader of run 1 fails with want. */
static void expect_rejected(const char *sql, const char *want)
{
    rec_db *db = tampered(sql);
    ps_err err = {0};
    FILE *null = fopen("/dev/null", "w");
    int64_t one = 1;
    CHECK_INT(report_run(db, 1, null, 100, &err), PS_ERR);
    CHECK_STR(err.msg, want);
    err.msg[0] = '\0';
    CHECK_INT(export_chrome(db, 1, NULL, null, &err), PS_ERR);
    CHECK_STR(err.msg, want);
    err.msg[0] = '\0';
    CHECK_INT(export_svg(db, &one, 1, NULL, null, &err), PS_ERR);
    CHECK_STR(err.msg, want);
    fclose(null);
    rec_close(db, &err);
}

static void test_rejected(void)
{
    /* a negative rank read svg's rank colours out of bounds; a huge one
     * overflowed chrome's thread ids (100 * rank) */
    expect_rejected("UPDATE event SET rank = -5 WHERE rowid = 3",
                    DB ": run 1: event row has rank -5 outside 0..3");
    expect_rejected("UPDATE event SET rank = 1 << 40 WHERE rowid = 3",
                    DB ": run 1: event row has rank 1099511627776 outside "
                       "0..3");
    expect_rejected("UPDATE event SET rank = 'x' WHERE rowid = 3",
                    DB ": run 1: event row has rank 'x' outside 0..3");
    expect_rejected("UPDATE event SET t_end = 1e308 * 10 WHERE rowid = 2",
                    DB ": run 1: event row has t_end inf, not a finite time "
                       ">= 0");
    expect_rejected("UPDATE event SET t_start = -1 WHERE rowid = 2",
                    DB ": run 1: event row has t_start -1, not a finite time "
                       ">= 0");
    expect_rejected("UPDATE event SET t_end = t_start - 0.5 WHERE rowid = 2",
                    DB ": run 1: event row has t_end 0.5 before t_start 1");
    expect_rejected("UPDATE event SET mb = 1 << 33 WHERE rowid = 2",
                    DB ": run 1: event row has mb 8589934592, not a 32-bit "
                       "integer");
    expect_rejected("UPDATE transfer SET dst = 9 WHERE rowid = 1",
                    DB ": run 1: transfer row has dst 9 outside 0..3");
    expect_rejected("UPDATE transfer SET bytes = -1 WHERE rowid = 1",
                    DB ": run 1: transfer row has bytes -1, not a finite "
                       "number >= 0");
    expect_rejected("UPDATE memory SET rank = -1 WHERE rowid = 1",
                    DB ": run 1: memory row has rank -1 outside 0..3");
    expect_rejected("UPDATE rank_stat SET bubble = -1e308 * 10 WHERE rank = 2",
                    DB ": run 1: rank_stat row has bubble -inf, not a finite "
                       "number");
    expect_rejected("UPDATE run SET makespan = 1e308 * 10",
                    DB ": run 1: run row has makespan inf, not a finite time "
                       ">= 0");
    /* the bound comes from the params' cluster when there is one */
    expect_rejected("UPDATE run SET params = '{\"cluster\":{\"ranks\":2}}'",
                    DB ": run 1: event row has rank 2 outside 0..1");
}

/* A makespan near DBL_MAX is finite, so it is drawn: the axis step was
 * computed as makespan * 12 / cols, infinite, and the tick loop never
 * ended. */
static void test_huge_makespan(void)
{
    static const char *const sql[] = {"UPDATE run SET makespan = 1e308",
                                      "UPDATE run SET makespan = 1.79e308",
                                      "UPDATE run SET makespan = 4e-320"};
    for (int i = 0; i < 3; i++) {
        rec_db *db = tampered(sql[i]);
        ps_err err = {0};
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        CHECK_INT(report_run(db, 1, f, 100, &err), PS_OK);
        int64_t one = 1;
        CHECK_INT(export_svg(db, &one, 1, NULL, f, &err), PS_OK);
        CHECK_INT(export_chrome(db, 1, NULL, f, &err), PS_OK);
        fclose(f);
        CHECK_HAS(buf, "rank 3 |");
        if (i == 0)
            CHECK_HAS(buf, "1e+308 s\n");
        free(buf);
        rec_close(db, &err);
    }
}

/* An untouched run passes, and the bound is its cluster's size. */
static void test_clean(void)
{
    rec_db *db = tampered("SELECT 1");
    ps_err err = {0};
    int32_t n = 0;
    CHECK_INT(dbcheck_run(db, 1, &n, &err), PS_OK);
    CHECK_INT(n, 4);
    CHECK_INT(dbcheck_run(db, 7, &n, &err), PS_OK); /* absent: caller says */
    rec_close(db, &err);
    unlink(DB);
}

int main(void)
{
    test_rejected();
    test_huge_makespan();
    test_clean();
    return harness_done();
}
