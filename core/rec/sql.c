/* The recorder's low SQL helpers, below every other file of rec/ that
 * writes: the one error line of a failed SQLite call (with what a
 * read-only file or directory lacks), waiting for another process's lock
 * (busy handler, backoff), and the write path's statements, prepared on
 * first use and stepped. The connection and the transactions are in
 * rec/txn.c, the write path in rec/rec.c. */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "rec/impl.h"

/* ------------------------------------------------------------------ */
/* Errors and locks                                                    */
/* ------------------------------------------------------------------ */
/* What a write to path needs that it lacks: its file or its directory
 * writable (a database in WAL mode keeps its -wal and -shm files beside
 * it). "" when both are. */
static const char *readonly_hint(const char *path, char *buf, size_t n)
{
    char dir[4200];
    rec_dir_of(path, dir, sizeof dir);
    if (access(path, F_OK) != 0 && access(dir, W_OK) != 0)
        snprintf(buf, n,
                 " (its directory %s is read-only: the database cannot be "
                 "created there)",
                 dir);
    else if (access(path, W_OK) != 0 && errno == EACCES)
        snprintf(buf, n,
                 " (%s is read-only for this user: make it writable, or "
                 "give another database)",
                 path);
    else if (access(dir, W_OK) != 0 && (errno == EACCES || errno == EROFS))
        snprintf(buf, n,
                 " (its directory %s is read-only, and a database in WAL mode "
                 "needs to write its -wal and -shm files beside it: copy the "
                 "database to a writable directory, or give another one)",
                 dir);
    else if (access(path, W_OK) != 0 && errno == EROFS)
        snprintf(buf, n, " (%s is on a read-only file system)", path);
    else
        buf[0] = '\0';
    return buf;
}

int rec_sql_fail(rec_db *db, const char *what, ps_err *err)
{
    if (db->busy_since < 0) {
        db->busy_since = 0;
        return ps_errf(err,
                       "%s: %s: database is locked (another process held it "
                       "for %d s)",
                       db->path, what, REC_BUSY_LIMIT_S);
    }
    int code = db->db ? sqlite3_errcode(db->db) & 0xff : SQLITE_CANTOPEN;
    char hint[4400] = "";
    if (code == SQLITE_READONLY || code == SQLITE_CANTOPEN)
        readonly_hint(db->path, hint, sizeof hint);
    return ps_errf(err, "%s: %s: %s%s", db->path, what,
                   db->db ? sqlite3_errmsg(db->db) : "out of memory", hint);
}

double rec_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sleeps between d/2 and d microseconds, d doubling from 50 us with each
 * try up to 5 ms: short first tries catch a lock that is about to be
 * released (a run's transaction takes about 100 us), the cap keeps every
 * waiter trying often enough to get its turn among 8 busy writers, and the
 * jitter keeps waiters from retrying in lock step. */
void rec_backoff(rec_db *db, int tries)
{
    long d = 50L << (tries < 7 ? tries : 7);
    if (d > 5000)
        d = 5000;
    db->rng ^= db->rng << 13; /* xorshift64 */
    db->rng ^= db->rng >> 7;
    db->rng ^= db->rng << 17;
    long us = d / 2 + (long)(db->rng % (uint64_t)(d / 2 + 1));
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL); /* a signal cuts it short: one more try */
}

/* SQLite's busy handler: called when a lock is held by another process;
 * returning 0 gives up with SQLITE_BUSY. With one commit per run SQLite's
 * own busy_timeout(10 s) also got 8 x 12000 runs through (tests/stress.sh;
 * the longest wait with this handler was 0.23 s); this one waits longer,
 * REC_BUSY_LIMIT_S, for another process writing a large events-level run
 * (seconds each), sleeps at most 5 ms instead of 100 ms, and marks a wait
 * it gave up on so that the message can say so. */
int rec_busy_handler(void *ctx, int tries)
{
    rec_db *db = ctx;
    double t = rec_monotonic();
    if (tries == 0)
        db->busy_since = t;
    else if (t - db->busy_since >= REC_BUSY_LIMIT_S) {
        db->busy_since = -1; /* gave up: rec_sql_fail says so */
        return 0;
    }
    rec_backoff(db, tries);
    return 1;
}

/* Runs statements that return no rows, for setting up a database, on
 * the connection as it is (rec_exec_sql reopens a published file's first).
 * Switching a new file to WAL needs it to itself, and SQLite reports a
 * second process opening it meanwhile as SQLITE_BUSY without calling the
 * busy handler (PRAGMA journal_mode = WAL failed in 2 of 400 writers
 * racing to create a file), so busy is retried here too. */
int rec_exec_conn(rec_db *db, const char *sql, ps_err *err)
{
    double t0 = rec_monotonic();
    for (int tries = 0;; tries++) {
        int rc = sqlite3_exec(db->db, sql, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            return PS_OK;
        if ((rc & 0xff) != SQLITE_BUSY)
            break;
        if (rec_monotonic() - t0 >= REC_BUSY_LIMIT_S) {
            db->busy_since = -1;
            break;
        }
        rec_backoff(db, tries);
    }
    return rec_sql_fail(db, "cannot set up the database", err);
}

/* ------------------------------------------------------------------ */
/* Statements                                                          */
/* ------------------------------------------------------------------ */

static const char *const stmt_sql[NSTMT] = {
    [ST_RUN] =
        "INSERT INTO run(kind, name, schedule, stages, microbatches, "
        "virtual_stages, dp, makespan, bubble, closed_form_bubble, "
        "imbalance, peak_memory, p2p, params, status, error, fits, tp, "
        "sequence_parallel, recompute, sweep, point, point_index, tags, "
        "model, seq_length, micro_batch, global_batch, scenario, "
        "created, " REC_EFF_COLS ", backend, simulated, folded) VALUES (?1, "
        "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
        "?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, "
        "?28, ?29, coalesce(?30, strftime('%Y-%m-%dT%H:%M:%SZ', "
        "'now')), " REC_EFF_ARGS ", coalesce(?42, 'sim'), ?43, ?44)",
    [ST_STAGE] = STAGE_COLS STAGE_ROW,
    [ST_RANK] = RANK_COLS RANK_ROW,
    [ST_STAGE4] = STAGE_COLS ROWS4(STAGE_ROW),
    [ST_RANK4] = RANK_COLS ROWS4(RANK_ROW),
    [ST_COLL] = "INSERT INTO collective(run, op, algorithm, ranks, bytes, "
                "time, algbw, busbw, protocol) VALUES (?1, ?2, ?3, ?4, ?5, "
                "?6, ?7, ?8, ?9)",
    [ST_LINK] = "INSERT INTO link(run, src, dst, bandwidth, latency, bytes, "
                "busy) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_MEMBER] = "INSERT INTO rank_member(run, rank, member, tp, cp, dp, "
                  "pp) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_SPAN] = "INSERT INTO span(run, event_first, event_last, "
                "transfer_first, transfer_last, memory_first, memory_last) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    /* IMMEDIATE takes the write lock up front: a deferred transaction
     * that has read would get SQLITE_BUSY_SNAPSHOT when it tries to write
     * after another process committed, which no busy handler can cure */
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_SAVEPOINT] = "SAVEPOINT run",
    [ST_RELEASE] = "RELEASE run",
    [ST_ROLLBACK_TO] = "ROLLBACK TO run",
};

/* Steps a write-path statement that returns no rows and resets it. The
 * bindings stay; every caller rebinds all parameters. */
int rec_step_done(rec_db *db, sqlite3_stmt *st, ps_err *err)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return PS_OK;
    return rec_sql_fail(db, "run not recorded", err);
}

/* The write-path statement id, prepared on first use: a summary run never
 * pays for the timeline's INSERTs, a pipeline never for the collective
 * row. NULL with err filled
 * when SQLite cannot prepare it. */
sqlite3_stmt *rec_stmt(rec_db *db, enum stmt_id id, ps_err *err)
{
    if (!db->st[id] &&
        sqlite3_prepare_v3(db->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                           &db->st[id], NULL) != SQLITE_OK)
        rec_sql_fail(db, "cannot prepare the inserts", err);
    return db->st[id];
}
