/* Internal to the recorder (rec.c, rec_schema.c, rec_read.c); not a
 * public header: nothing outside core/rec*.c includes it. The handle's
 * record, the prepared statements' ids, and the SQL helpers the three files
 * share (errors, the busy handler and its back-off, setup statements). */
#ifndef PS_REC_IMPL_H
#define PS_REC_IMPL_H

#include <sqlite3.h>

#include "mem.h"
#include "net.h"
#include "rec.h"

/* The pipesim tables (rec_schema.c lists them). */
#define REC_NTABLES 8

enum stmt_id {
    ST_RUN,
    ST_STAGE,
    ST_RANK,
    ST_COLL,
    ST_LINK,
    ST_SPAN,
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_SAVEPOINT,
    ST_RELEASE,
    ST_ROLLBACK_TO,
    NSTMT
};

/* The timeline tables take REC_ROWS rows per INSERT: one statement
 * execution (cursor open, seek, close) per 64 rows instead of per row.
 * The statement is INSERT ... SELECT * FROM (VALUES (...), ...) LIMIT ?L,
 * so the same statement also writes the last, partial group. */
#define REC_ROWS 64

enum rows_id { ROWS_EVENT, ROWS_TRANSFER, ROWS_MEMORY, NROWS };

typedef struct rowbuf {
    sqlite3_stmt *st;
    int ncols;
    int n;         /* rows bound and not yet inserted */
    int64_t count; /* rows this run has inserted */
    int64_t last;  /* the rowid of the last of them */
} rowbuf;

struct rec_db {
    sqlite3 *db;
    char *path;
    int readonly;
    double busy_since; /* when the current wait for a lock began */
    uint64_t rng;      /* jitter of the busy handler's sleeps */
    sqlite3_stmt *st[NSTMT];
    rowbuf rows[NROWS];
    mem_rank *mem; /* scratch for mem_ledger, mem_cap entries */
    int32_t mem_cap;
    net_link_info *links; /* scratch for net_links, links_cap entries */
    int32_t links_cap;
    int kinds_ok;  /* the kind tables hold every name of rec.c's lists */
    int streaming; /* rec_stream_begin's transaction is open */
    /* batched commits (rec_set_batch): the mode of the next rec_write, the
     * batch's transaction, its runs and when it began */
    int batch_mode, batch_open, batch_runs;
    double batch_t0;
    int stream_rc; /* the first failure of a streamed row, in stream_err */
    ps_err stream_err;
};

struct rec_query {
    rec_db *db;
    sqlite3_stmt *st;
};

/* A run's transaction: BEGIN IMMEDIATE ... COMMIT, or in batch mode a
 * SAVEPOINT inside the batch's transaction (opened on the first run; it
 * commits every REC_BATCH_RUNS runs or REC_BATCH_SECONDS). run_begin
 * commits an open batch first when the mode is off. run_rollback undoes
 * the run alone. */
int rec_run_begin(rec_db *db, ps_err *err);
int rec_run_commit(rec_db *db, ps_err *err);
void rec_run_rollback(rec_db *db);

/* Fills err with "PATH: what: why", why being SQLite's message, and returns
 * PS_ERR. The SQL stays out: it is pipesim's, not the user's, and a 64-row
 * INSERT runs to kilobytes. A lock given up on says how long it was waited
 * for. */
int rec_sql_fail(rec_db *db, const char *what, ps_err *err);
/* CLOCK_MONOTONIC in seconds. */
double rec_monotonic(void);
/* Sleeps before lock retry number tries (jittered, capped; see rec.c). */
void rec_backoff(rec_db *db, int tries);
/* SQLite's busy handler for every rec_db (ctx is the rec_db). */
int rec_busy_handler(void *ctx, int tries);
/* Runs setup statements that return no rows, retrying busy; PS_ERR with
 * the message in err. */
int rec_exec_sql(rec_db *db, const char *sql, ps_err *err);
/* A handle for path with nothing open (NULL and err filled when out of
 * memory), and its release with everything it holds. */
rec_db *rec_new_handle(const char *path, ps_err *err);
void rec_free_handle(rec_db *db);

/* rec.c: before a run's timeline rows (inside its transaction): the kind
 * names, the row statements and empty row buffers. */
int rec_timeline_start(rec_db *db, ps_err *err);
/* rec.c: one event row (a COMPUTE op of rank) or transfer row (a SEND of
 * src), batched REC_ROWS to an INSERT. */
int rec_event_row(rec_db *db, int32_t rank, const prog_op *op, ps_err *err);
int rec_transfer_row(rec_db *db, int32_t src, const prog_op *op, ps_err *err);
/* rec.c: one memory row (rank's total bytes after a change at t). */
int rec_memory_row(rec_db *db, int32_t rank, double t, double bytes,
                   ps_err *err);

/* rec_schema.c: user_version and the number of pipesim tables and of all
 * objects present; fails when the file is not SQLite at all. */
int rec_inspect(rec_db *db, int *version, int *tables, int *objects,
                ps_err *err);
/* rec_schema.c: for a writer, after opening: refuses a foreign file or an
 * unknown version, switches to WAL, creates the schema in an empty file
 * and upgrades an old one in place, each atomically. */
int rec_schema_prepare(rec_db *db, ps_err *err);

#endif
