/* Internal to the recorder (rec/rec.c, rec/txn.c, rec/schema.c, rec/read.c and
 * the others of core/rec*.c); not a public header: nothing outside
 * core/rec*.c includes it. The handle's record, the prepared statements'
 * ids, and the SQL helpers the files share (errors, the busy handler and
 * its back-off, setup statements, transactions). */
#ifndef PS_REC_IMPL_H
#define PS_REC_IMPL_H

#include <sqlite3.h>

#include "net/net.h"
#include "rec/rec.h"
#include "sim/mem.h"

/* The pipesim tables (rec/schema.c lists them), and how many a file of
 * schema version v has (rank_member came with version 9). */
#define REC_NTABLES 9
#define REC_NTABLES_AT(v) ((v) >= 9 ? REC_NTABLES : 8)

/* A run's stage and rank_stat rows go four to an INSERT: a statement
 * execution costs about as much as the rows it writes. */
#define STAGE_COLS                                                             \
    "INSERT INTO stage(run, stage, rank, chunk, first_layer, last_layer, "     \
    "fwd_flops, params, fwd_time, bwd_time, act_bytes, out_bytes, "            \
    "exposed_comm, tp_comm, tp_exposed) VALUES "
#define STAGE_ROW "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define STAGE_NCOLS 15
#define RANK_COLS                                                              \
    "INSERT INTO rank_stat(run, rank, busy, bubble, static_memory, "           \
    "peak_memory, t_peak, exposed_comm, capacity, fits, tp_comm, "             \
    "tp_exposed) VALUES "
#define RANK_ROW "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define RANK_NCOLS 12
#define ROWS4(row) row ", " row ", " row ", " row

enum stmt_id {
    ST_RUN,
    ST_STAGE,
    ST_RANK,
    ST_STAGE4, /* four stage rows in one INSERT (write_summary) */
    ST_RANK4,  /* four rank_stat rows */
    ST_COLL,
    ST_LINK,
    ST_SPAN,
    ST_MEMBER,
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_SAVEPOINT,
    ST_RELEASE,
    ST_ROLLBACK_TO,
    NSTMT
};

/* The timeline tables take blocks of up to REC_ROWS rows per INSERT ...
 * SELECT from the pipesim_rows virtual table (rec/rows.c), which reads the
 * block from C memory: one statement execution (cursor open, seek, close)
 * per block and no bind call per value. 256 rather than 64: the statement's
 * fixed cost per row drops by 4 (BENCHMARKS.md, the recorder). */
#define REC_ROWS 256

enum rows_id { ROWS_EVENT, ROWS_TRANSFER, ROWS_MEMORY, NROWS };

/* One timeline row's values, as pipesim_rows gives them per table
 * (rec/rec.c's rows_def maps them to columns). */
typedef struct rec_row {
    int64_t i[5];
    double d[3];
} rec_row;

typedef struct rec_writer rec_writer; /* rec/writer.c */

/* rec/sum.c: a batch's stage and rank_stat rows, kept until it commits.
 * A row's values as pipesim_summary gives them: i[0..REC_SUM_INTS) the
 * integers (bit k of nulls: i[k] is NULL), d the reals (NaN: NULL). */
#define REC_SUM_INTS 6
/* the rows a batch keeps before it commits (rec_run_commit) */
#define REC_SUM_MAX 8192
enum sum_id { SUM_STAGE, SUM_RANK, NSUM };
typedef struct rec_sum_row {
    int64_t i[REC_SUM_INTS];
    double d[9];
    unsigned nulls;
} rec_sum_row;
typedef struct rec_sums {
    sqlite3_stmt *st;  /* INSERT ... SELECT ... FROM pipesim_summary */
    rec_sum_row *rows; /* cap allocated, n kept */
    int32_t n;
    size_t cap;
    int32_t mark; /* n when the current run's savepoint began */
} rec_sums;

/* rec/vtab.c: a row source an INSERT ... SELECT reads from C memory, an
 * eponymous virtual table (pipesim_rows in rec/rows.c, pipesim_summary in
 * rec/sum.c). A kind says what its rows look like; its owner points the
 * scan at rows, n and nulls around each statement execution. */
typedef struct rec_vtab_kind {
    const char *name; /* the table's name in SQL */
    const char *decl; /* the CREATE TABLE sqlite3_declare_vtab takes */
    double max_rows;  /* xBestIndex's estimate */
    int (*column)(sqlite3_vtab_cursor *c, sqlite3_context *ctx, int col);
} rec_vtab_kind;
typedef struct rec_vtab_scan {
    const rec_vtab_kind *kind;
    const void *rows; /* what the next scan reads */
    int32_t n;
    unsigned nulls;        /* the kind's own NULL flags */
    int registered;        /* on the current connection (reset on close) */
    sqlite3_module module; /* lives as long as the connection */
} rec_vtab_scan;
/* A scan's cursor: the scan's rows when it began, and the current one. */
typedef struct rec_vtab_cursor {
    sqlite3_vtab_cursor base;
    const void *rows;
    int32_t n, k;
    unsigned nulls;
} rec_vtab_cursor;

typedef struct rowbuf {
    sqlite3_stmt *st; /* INSERT ... SELECT ... FROM pipesim_rows */
    unsigned nulls;   /* the integers (i0..i4) whose values below 0 are NULL */
    int n;            /* rows in buf not yet inserted */
    int64_t count;    /* rows this run has inserted */
    int64_t last;     /* the rowid of the last of them */
    rec_row buf[REC_ROWS]; /* the rows of the caller's thread (not the
                              writer thread's blocks) */
} rowbuf;

struct rec_db {
    sqlite3 *db;
    char *path;
    /* a new file's scratch the connection is on until its first commit
     * publishes it at path (rec_publish), or NULL */
    char *pending;
    /* 1: the first run published the file and left the connection closed
     * (rec/txn.c's publish): rec_reopen opens it at path when anything
     * more is asked of it */
    int reopen;
    int64_t published_runs; /* the runs the file holds while reopen is 1 */
    int schema_rest; /* the scratch lacks its views and triggers (base/embed.h)
                      */
    int readonly;
    unsigned had;      /* rec_sidecars before the connection opened the file */
    double busy_since; /* when the current wait for a lock began */
    uint64_t rng;      /* jitter of the busy handler's sleeps */
    sqlite3_stmt *st[NSTMT];
    rowbuf rows[NROWS];
    mem_rank *mem; /* scratch for mem_ledger, mem_cap entries */
    int32_t mem_cap;
    net_link_info *links; /* scratch for net_links, links_cap entries */
    int32_t links_cap;
    int kinds_ok;   /* the kind tables hold every name of rec/rec.c's lists */
    int streaming;  /* rec_stream_begin's transaction is open */
    rec_ship *ship; /* runs go to it (rec/ship.c), or NULL */
    rec_writer *writer; /* the writer thread, NULL until a first stream */
    int writing;        /* rows go to the writer thread (rec/writer.c) */
    /* batched commits (rec_set_batch): the mode of the next rec_write, the
     * batch's transaction, its runs and when it began */
    int batch_mode, batch_open, batch_runs;
    double batch_t0;
    int64_t lost_runs; /* rec_lost_runs */
    int stream_rc;     /* the first failure of a streamed row, in stream_err */
    ps_err stream_err;
    int rows_code;   /* SQLite's code of the last failed timeline insert */
    int defer_ckpt;  /* a streamed run is committing (rec_write) */
    int ckpt_frames; /* REC_CKPT_FRAMES (a test may lower it) */
    /* the block pipesim_rows reads (rec/rows.c), set by rec_rows_insert
     * around one statement execution */
    rec_vtab_scan vt;
    /* the open batch's summary rows (rec/sum.c) and the scan
     * pipesim_summary reads during their INSERT */
    rec_sums sums[NSUM];
    rec_vtab_scan vs;
};

struct rec_query {
    rec_db *db;
    sqlite3_stmt *st;
};

/* rec/txn.c: a run's transaction: BEGIN IMMEDIATE ... COMMIT, or in batch mode
 * a SAVEPOINT inside the batch's transaction (opened on the first run; it
 * commits every REC_BATCH_RUNS runs or REC_BATCH_SECONDS). run_begin
 * commits an open batch first when the mode is off. run_rollback undoes
 * the run alone. */
int rec_run_begin(rec_db *db, ps_err *err);
/* rec/txn.c: commits the open batch, if any (PS_ERR: its runs are lost,
 * which the message says). */
int rec_batch_commit(rec_db *db, ps_err *err);
int rec_run_commit(rec_db *db, ps_err *err);
void rec_run_rollback(rec_db *db);

/* Fills err with "PATH: what: why", why being SQLite's message, and returns
 * PS_ERR. The SQL stays out: it is pipesim's, not the user's, and a 64-row
 * INSERT runs to kilobytes. A lock given up on says how long it was waited
 * for. */
int rec_sql_fail(rec_db *db, const char *what, ps_err *err);
/* rec/vtab.c: registers scan's module on db's connection, once; _on: on
 * connection c, SQLite's code */
int rec_vtab_register(rec_db *db, rec_vtab_scan *scan,
                      const rec_vtab_kind *kind, ps_err *err);
int rec_vtab_register_on(sqlite3 *c, rec_vtab_scan *scan,
                         const rec_vtab_kind *kind);
/* CLOCK_MONOTONIC in seconds. */
double rec_monotonic(void);
/* Sleeps before lock retry number tries (jittered, capped; see rec/sql.c). */
void rec_backoff(rec_db *db, int tries);
/* SQLite's busy handler for every rec_db (ctx is the rec_db). */
int rec_busy_handler(void *ctx, int tries);
/* Runs setup statements that return no rows, retrying busy; PS_ERR with
 * the message in err. rec_exec_sql (rec/txn.c) first opens the connection
 * of a file that a one-run publish left without one (rec_reopen);
 * rec_exec_conn (rec/sql.c) runs them on the connection as it is: the
 * schema's (rec/schema.c), which runs while the connection is made
 * (rec_schema_prepare) or on one already open (rec_schema_rest). */
int rec_exec_sql(rec_db *db, const char *sql, ps_err *err);
int rec_exec_conn(rec_db *db, const char *sql, ps_err *err);
/* rec/rec.c: rec_write's run written, neither shipped nor after shipped
 * runs (rec_write, rec/ship.c, has seen to both). */
int rec_write_run(rec_db *db, const rec_payload *p, enum rec_level level,
                  int64_t *run_id, ps_err *err);
/* rec/copy.c: rec_copy_new without publishing db first (rec_copy_new,
 * rec/txn.c, publishes it and calls this). */
rec_copy *rec_copy_attach(rec_db *db, const char *path, ps_err *err);
/* A handle for path with nothing open (NULL and err filled when out of
 * memory), and its release with everything it holds. */
rec_db *rec_new_handle(const char *path, ps_err *err);
void rec_free_handle(rec_db *db);

/* rec/sql.c: the write-path statement id, prepared on first use (NULL with err
 * filled when SQLite cannot prepare it), and a step of a statement that
 * returns no rows, then its reset (PS_ERR: "run not recorded"). */
sqlite3_stmt *rec_stmt(rec_db *db, enum stmt_id id, ps_err *err);
int rec_step_done(rec_db *db, sqlite3_stmt *st, ps_err *err);

/* rec/rec.c: before a run's timeline rows (inside its transaction): the kind
 * names, the row statements and empty row buffers. */
int rec_timeline_start(rec_db *db, ps_err *err);
/* rec/rec.c: one event row (a COMPUTE op of rank) or transfer row (a SEND of
 * src), batched REC_ROWS to an INSERT. */
int rec_event_row(rec_db *db, int32_t rank, const prog_op *op, ps_err *err);
int rec_transfer_row(rec_db *db, int32_t src, const prog_op *op, ps_err *err);
/* rec/rec.c: one memory row (rank's total bytes after a change at t). */
int rec_memory_row(rec_db *db, int32_t rank, double t, double bytes,
                   ps_err *err);

/* rec/rows.c: inserts rows[0..n) into table's row table (one statement), or
 * fails with "run not recorded". Counts them into the run's span. */
int rec_rows_insert(rec_db *db, int table, const rec_row *rows, int32_t n,
                    ps_err *err);
/* rec/rows.c: registers pipesim_rows on the connection, once (harmless
 * to call again); PS_ERR with SQLite's message. */
int rec_rows_module(rec_db *db, ps_err *err);
/* rec/rows.c: pipesim_rows on another connection (the second writer's,
 * rec/aux.c) with its own scan; SQLite's code. */
int rec_rows_module_on(sqlite3 *c, rec_vtab_scan *scan);
/* rec/rows.c: a timeline table's INSERT from pipesim_rows and the integers
 * it reads as NULL below 0 (the same statement fits a twin table of the
 * same declaration, rec/aux.c). */
const char *rec_rows_sql(int table, unsigned *nulls);

/* The timeline of the run with id of payload p (rec/timeline.c): its
 * event, transfer and memory rows unless streamed (the engine's hook
 * wrote them), the rows still buffered, and its span rows. Inside the
 * run's transaction. */
int rec_timeline_write(rec_db *db, const rec_payload *p, int streamed,
                       int64_t id, ps_err *err);

/* rec/sum.c, a batch's summary rows. rec_sum_add appends n zeroed rows to
 * table's (NULL: out of memory); rec_sum_flush inserts what is kept (the
 * batch's commit, before COMMIT; PS_ERR: "run not recorded"), which
 * empties it; rec_sum_pending counts the kept rows. A run's savepoint
 * marks where its rows begin (rec_sum_mark) and its rollback drops them
 * (rec_sum_undo); rec_sum_drop forgets every kept row (the batch rolled
 * back), rec_sum_free releases the buffers and statements. */
rec_sum_row *rec_sum_add(rec_db *db, int table, int32_t n);
int rec_sum_flush(rec_db *db, ps_err *err);
int32_t rec_sum_pending(const rec_db *db);
void rec_sum_mark(rec_db *db);
void rec_sum_undo(rec_db *db);
void rec_sum_drop(rec_db *db);
void rec_sum_free(rec_db *db);

/* rec/writer.c, the writer threads. rec_writer_start starts them once per
 * handle (PS_ERR: no thread; rows are then bound on the caller's thread)
 * and readies a run; aux: the connection has pipesim_aux attached and no
 * transaction was open before the run's (rec_aux_attach), so the run's
 * transfer rows may go through the twin (rec/aux.c).
 * While db->writing, the caller fills rec_writer_row's slot for table and
 * hands it over with rec_writer_commit_row (a full block goes to a
 * writer), and must not use the connection. rec_writer_drain hands over
 * the partial blocks and waits until every row is inserted, returning the
 * first insert's failure; rec_writer_discard drops what is not inserted
 * yet and waits; after either the caller owns the connection again.
 * rec_writer_free stops the threads (NULL writer: no-op). */
int rec_writer_start(rec_db *db, int aux);
rec_row *rec_writer_row(rec_db *db, int table);
void rec_writer_commit_row(rec_db *db, int table);
int rec_writer_drain(rec_db *db, ps_err *err);
void rec_writer_discard(rec_db *db);
void rec_writer_free(rec_db *db);
/* rec/aux.c, the second writer's in-memory twin of transfer_row.
 * rec_aux_new makes it from the file's declaration (NULL: none, rows go
 * to the first writer); rec_aux_attach attaches pipesim_aux to db's
 * connection, outside any transaction (PS_ERR: not attached);
 * rec_aux_begin empties the twin for a run; rec_aux_insert inserts a
 * block (the second writer's thread); rec_aux_move copies the run's rows
 * into the file's transfer_row, counting them into its span (the first
 * writer's thread, the second one idle). */
typedef struct rec_aux rec_aux;
rec_aux *rec_aux_new(rec_db *db);
/* rec/aux.c: 1 when a second writer can have a core: the twin costs
 * about 12 % more CPU in all for a critical path 24 % shorter, which
 * gains only with a core free for it (BENCHMARKS.md: at a load of 4 on
 * 2 cores the run took 15 % longer with it), so it is used when the
 * last minute's load average leaves one (below the processors - 1). */
int rec_aux_worth(void);
void rec_aux_free(rec_aux *a);
int rec_aux_attach(rec_db *db);
int rec_aux_begin(rec_aux *a);
int rec_aux_insert(const rec_db *db, rec_aux *a, const rec_row *rows, int32_t n,
                   ps_err *err);
int rec_aux_move(rec_db *db, rec_aux *a, ps_err *err);
/* rec/flush.c: a read-only descriptor on the file a streamed run's pages
 * are spilled to (a new file's scratch, else the -wal), -1 when it cannot
 * be opened; rec_flush_start asks the kernel to begin writing its dirty
 * pages back (no wait; a no-op for fd -1 and off Linux). */
int rec_flush_open(const rec_db *db);
void rec_flush_start(int fd);
/* Asks the writer for a PASSIVE checkpoint on its own connection (the
 * caller keeps using its own); rec_writer_free waits for it. */
void rec_writer_checkpoint(rec_db *db);
/* The log size (frames) at which a commit asks for a checkpoint: SQLite's
 * default autocheckpoint, which rec_open replaces (rec/txn.c, wal_hook). */
#define REC_CKPT_FRAMES 1000

/* rec/schema.c: user_version and the number of pipesim tables and of all
 * objects present; fails when the file is not SQLite at all. */
int rec_inspect(rec_db *db, int *version, int *tables, int *objects,
                ps_err *err);
/* rec/schema.c: a new file for a missing path: a scratch file beside it
 * holding the empty schema in rollback mode (its malloc'd name, NULL when
 * it cannot be made); rec_schema_link switches it to WAL, syncs it (sync)
 * and links it at path: 1 done, 0 path exists (or no hard links: errno),
 * -1 the scratch could not be synced (errno). */
char *rec_schema_scratch(const char *path, int *rest);
/* rec/schema.c: *rest (rec_schema_scratch) is 1 when the scratch was made
 * from the embedded image (base/embed.h), whose views and triggers are not in
 * it yet: rec_schema_rest writes them (db->schema_rest) before the file
 * is published or read; a no-op otherwise. */
int rec_schema_rest(rec_db *db, ps_err *err);
int rec_schema_link(const char *path, const char *scratch, int sync);
/* rec/txn.c: publishes a new file's scratch at its path (rec/schema.c);
 * with id, the run id of the scratch's one committed run, which becomes
 * its id in the file (another process's file when it made the path first:
 * the run is copied into it), and the connection is left closed until it
 * is needed (rec_reopen); without, it is reopened at the path at once. */
int rec_publish(rec_db *db, int64_t *id, ps_err *err);
/* rec/txn.c: opens the connection at the path when rec_publish left it
 * closed (db->reopen); a no-op otherwise. Every entry point that uses the
 * connection calls it first (rec_run_begin, rec_exec_sql, rec_publish). */
int rec_reopen(rec_db *db, ps_err *err);
/* rec/file.c: path as an SQLite URI ("file:" and the path, every byte
 * but [A-Za-z0-9/._-~+,=@] escaped), with "?params" when params is not
 * NULL; malloc'd, NULL when out of memory. Open it with SQLITE_OPEN_URI. */
char *rec_uri(const char *path, const char *params);
/* rec/file.c: the directory of path ("." without one) into buf; buf. */
const char *rec_dir_of(const char *path, char *buf, size_t n);
/* rec/file.c: which of path's -wal and -shm exist (REC_HAD_ bits), noted
 * before a read-only open; rec_sidecars_tidy removes after its close the
 * ones that were not there before, when no connection of any process
 * uses them and the log holds no frame (SQLite removes them only from a
 * connection that can write the database). */
#define REC_HAD_WAL 1u
#define REC_HAD_SHM 2u
unsigned rec_sidecars(const char *path);
void rec_sidecars_tidy(const char *path, unsigned had);

/* rec/schema.c: for a writer, after opening: refuses a foreign file or an
 * unknown version, switches to WAL, creates the schema in an empty file
 * and upgrades an old one in place, each atomically. */
int rec_schema_prepare(rec_db *db, ps_err *err);

/* The run row's efficiency columns and their parameters in ST_RUN. */
#define REC_EFF_COLS                                                           \
    "model_flops, hardware_flops, tokens, gpus, peak_flops, precision, "       \
    "model_tflops_per_gpu, mfu, hardware_tflops_per_gpu, "                     \
    "tokens_per_s_per_gpu, efficiency_note"
#define REC_EFF_ARGS "?31, ?32, ?33, ?34, ?35, ?36, ?37, ?38, ?39, ?40, ?41"

/* Binds the run row's 11 efficiency columns (model_flops ...
 * efficiency_note, rec/rec.h) from parameter i on: e's figures and the
 * rates over makespan (rec/eff.c). Unknown values bind NULL. */
void rec_bind_efficiency(sqlite3_stmt *st, int i, const rec_eff *e,
                         double makespan);

#endif
