/* The recorder's connection: opening and closing a database for writing
 * (waiting for another process's lock with rec/sql.c's busy handler and
 * backoff), and the transactions around runs, one per run or a sweep's
 * batch of runs (rec_set_batch). The write path itself is in rec/rec.c. */
#include "rec/rec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "rec/impl.h"

/* ------------------------------------------------------------------ */
/* Errors and locks                                                    */
/* ------------------------------------------------------------------ */
/* rec_exec_conn (rec/sql.c) on the connection at the file's path, opened
 * first when a one-run publish left the file without one (rec_reopen). */
int rec_exec_sql(rec_db *db, const char *sql, ps_err *err)
{
    if (rec_reopen(db, err))
        return PS_ERR;
    return rec_exec_conn(db, sql, err);
}

/* ------------------------------------------------------------------ */
/* Handle                                                              */
/* ------------------------------------------------------------------ */

/* The connection closed, with every statement prepared on it (they are
 * prepared again on first use). */
static void close_conn(rec_db *db)
{
    for (int i = 0; i < NSTMT; i++) {
        sqlite3_finalize(db->st[i]);
        db->st[i] = NULL;
    }
    for (int i = 0; i < NROWS; i++) {
        sqlite3_finalize(db->rows[i].st);
        db->rows[i].st = NULL;
    }
    for (int i = 0; i < NSUM; i++) {
        sqlite3_finalize(db->sums[i].st);
        db->sums[i].st = NULL;
    }
    /* the virtual tables and the kinds are checked again on the next
     * connection (rec/rows.c, rec/sum.c, rec/rec.c) */
    db->vt.registered = 0;
    db->vs.registered = 0;
    db->kinds_ok = 0;
    sqlite3_close_v2(db->db);
    db->db = NULL;
}

void rec_free_handle(rec_db *db)
{
    rec_writer_free(db);
    rec_sum_free(db);
    /* a reader leaves nothing, nor does a writer SQLite opened read-only
     * (a file it cannot write), whose close does not remove them */
    int tidy = db->db && !db->pending &&
               (db->readonly || sqlite3_db_readonly(db->db, "main") == 1);
    close_conn(db);
    if (tidy)
        rec_sidecars_tidy(db->path, db->had);
    if (db->pending) /* never published: nothing of it is kept */
        unlink(db->pending);
    free(db->pending);
    free(db->path);
    free(db->mem);
    free(db->links);
    free(db);
}

rec_db *rec_new_handle(const char *path, ps_err *err)
{
    rec_db *db = calloc(1, sizeof *db);
    if (db)
        db->path = strdup(path);
    if (!db || !db->path) {
        free(db);
        ps_errf(err, "%s: out of memory", path);
        return NULL;
    }
    db->rng = ((uint64_t)getpid() << 32) ^ (uint64_t)(rec_monotonic() * 1e9) ^
              0x9e3779b97f4a7c15u;
    return db;
}

/* ------------------------------------------------------------------ */
/* Opening and closing                                                 */
/* ------------------------------------------------------------------ */

/* SQLite says only "unable to open database file" for a missing
 * directory; name the directory instead. */
static int check_parent(const char *path, ps_err *err)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return PS_OK;
    size_t n = (size_t)(slash - path);
    char *dir = malloc(n + 1);
    if (!dir)
        return ps_errf(err, "%s: out of memory", path);
    memcpy(dir, path, n);
    dir[n] = '\0';
    struct stat sb;
    int rc = PS_OK;
    if (stat(dir, &sb) != 0)
        rc = ps_errf(err, "%s: directory %s does not exist", path, dir);
    else if (!S_ISDIR(sb.st_mode))
        rc = ps_errf(err, "%s: %s is not a directory", path, dir);
    free(dir);
    return rc;
}

/* Called by SQLite after each commit with the log's size: SQLite's own
 * autocheckpoint (a PASSIVE checkpoint once the log holds REC_CKPT_FRAMES
 * frames, inside the commit), except for a streamed run's commit, whose
 * log is large (a 391k-row run: 3,000 frames, 12 MB, a checkpoint of 0.1
 * to 0.3 s here, most of it the two fsyncs): the writer thread runs that
 * one on its own connection once the run is committed (rec/writer.c). */
static int wal_hook(void *ctx, sqlite3 *c, const char *name, int frames)
{
    rec_db *db = ctx;
    if (frames < db->ckpt_frames)
        return SQLITE_OK;
    if (db->defer_ckpt && db->writer)
        rec_writer_checkpoint(db);
    else
        sqlite3_wal_checkpoint(c, name);
    return SQLITE_OK;
}

/* Opens db's connection: on the scratch of a new file (rec/schema.c) in
 * rollback mode with the journal in memory and no syncs, or on the file
 * at its path, checked and in WAL mode (rec_schema_prepare). */
static int connect(rec_db *db, ps_err *err)
{
    /* NOMUTEX: a rec_db is used from one thread at a time, so
     * SQLite's per-call locking is pure overhead on the per-row path;
     * URI: sources are attached read-only (rec/copy.c) */
    if (!db->pending)
        db->had = rec_sidecars(db->path);
    char *uri = rec_uri(db->pending ? db->pending : db->path, NULL);
    if (!uri)
        return ps_errf(err, "%s: out of memory", db->path);
    int rc = sqlite3_open_v2(uri, &db->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                 SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                             NULL);
    free(uri);
    if (rc != SQLITE_OK)
        return rec_sql_fail(db, "cannot open", err);
    /* Sweeps may write one file from several processes: wait for the
     * lock rather than fail at once. */
    sqlite3_busy_handler(db->db, rec_busy_handler, db);
    sqlite3_wal_hook(db->db, wal_hook, db);
    if (db->pending ? rec_exec_sql(db,
                                   "PRAGMA journal_mode = MEMORY; "
                                   "PRAGMA synchronous = OFF",
                                   err)
                    : rec_schema_prepare(db, err))
        return PS_ERR;
    /* Test only (tests/concurrency.sh): caps the database at N pages, so that
     * a full disk can be simulated without root or a small file system;
     * SQLite then fails the write with SQLITE_FULL as on a full disk. */
    const char *max_pages = getenv("PIPESIM_TEST_MAX_PAGES");
    if (max_pages && *max_pages) {
        char pragma[96];
        snprintf(pragma, sizeof pragma, "PRAGMA max_page_count = %ld",
                 strtol(max_pages, NULL, 10));
        if (rec_exec_sql(db, pragma, err))
            return PS_ERR;
    }
    return PS_OK;
}

rec_db *rec_open(const char *path, ps_err *err)
{
    if (check_parent(path, err))
        return NULL;
    rec_db *db = rec_new_handle(path, err);
    if (!db)
        return NULL;
    /* a new file is made beside the path and linked into place with its
     * first run (rec/schema.c: one fsync); an existing one is opened, and
     * so is a new one whose scratch cannot be made (created in place by
     * rec_schema_prepare, which then reports the real error) */
    int missing = rec_check_path(path, err);
    if (missing < 0) {
        rec_free_handle(db);
        return NULL;
    }
    if (missing)
        db->pending = rec_schema_scratch(path, &db->schema_rest);
    db->ckpt_frames = REC_CKPT_FRAMES;
    /* Test only (test_rec.c): checkpoints at N frames instead of
     * REC_CKPT_FRAMES, so that a small run exercises them. */
    const char *frames = getenv("PIPESIM_TEST_CKPT_FRAMES");
    if (frames && *frames)
        db->ckpt_frames = (int)strtol(frames, NULL, 10);
    if (connect(db, err)) {
        rec_free_handle(db);
        return NULL;
    }
    return db;
}

/* The run of a new file's scratch (its id there in *id) into the file
 * another process made at the path first, with the id it gets there. */
static int copy_first_run(rec_db *db, const char *scratch, int64_t *id,
                          ps_err *err)
{
    /* attached straight: the file is published and its connection open */
    rec_copy *c = rec_copy_attach(db, scratch, err);
    if (!c)
        return PS_ERR;
    int64_t off = 0;
    int rc = rec_exec_sql(db, "BEGIN IMMEDIATE", err);
    if (rc == PS_OK) {
        if (rec_copy_runs(c, *id, *id, &off, err)) {
            rec_rollback(db);
            rc = PS_ERR;
        } else {
            rc = rec_commit(db, err);
        }
    }
    rec_copy_free(c);
    if (rc == PS_OK)
        *id += off;
    return rc;
}

/* rec_publish; sync 0 for a sweep worker's scratch (rec_scratch). lazy:
 * a file linked into place is left without a connection (rec_reopen opens
 * one when it is needed), *id or none its one run. */
static int publish(rec_db *db, int64_t *id, int sync, int lazy, ps_err *err)
{
    if (!db->pending)
        return PS_OK;
    /* the file whole before anyone can see it */
    if (rec_schema_rest(db, err))
        return PS_ERR;
    char *scratch = db->pending;
    /* the connection knows the file by the scratch's name (its -wal
     * would be "<scratch>-wal"): closed before the file is anyone's */
    close_conn(db);
    int linked = rec_schema_link(db->path, scratch, sync);
    int e = errno;
    db->pending = NULL;
    int rc = PS_OK;
    ps_err ce;
    if (linked < 0)
        rc = ps_errf(err, "%s: cannot sync the new file: %s", db->path,
                     strerror(e));
    /* Issue 12, the fixed cost of a process: a one-run process is done
     * with the file once it is linked, and opening it again at the path
     * (checking the header, switching to WAL, which creates -wal and -shm,
     * parsing the schema again for the summary line's count, then the
     * checkpoint at the close) was 2.1 M of its 10 M instructions. */
    if (rc == PS_OK && linked == 1 && lazy) {
        db->reopen = 1;
        db->published_runs = id && *id > 0 ? 1 : 0;
        unlink(scratch);
        free(scratch);
        return PS_OK;
    }
    /* the file at the path: this one, or the one made first (or, without
     * hard links, made here in place) */
    if (connect(db, rc ? &ce : err))
        rc = PS_ERR;
    else if (rc == PS_OK && linked == 0 && id && *id > 0)
        rc = copy_first_run(db, scratch, id, err);
    unlink(scratch);
    free(scratch);
    return rc;
}

int rec_publish(rec_db *db, int64_t *id, ps_err *err)
{
    /* without a run to carry the caller goes on to use the connection */
    if (publish(db, id, 1, id != NULL, err))
        return PS_ERR;
    return id ? PS_OK : rec_reopen(db, err);
}

int rec_reopen(rec_db *db, ps_err *err)
{
    if (!db->reopen)
        return PS_OK;
    db->reopen = 0;
    db->published_runs = 0;
    return connect(db, err);
}

/* ------------------------------------------------------------------ */
/* Copies                                                              */
/* ------------------------------------------------------------------ */

/* rec/copy.c's copies begin here: what they write to is published and
 * its batch committed first. */
rec_copy *rec_copy_new(rec_db *db, const char *path, ps_err *err)
{
    /* a new file's connection moves to its path first */
    if (rec_publish(db, NULL, err))
        return NULL;
    return rec_copy_attach(db, path, err);
}

int rec_begin(rec_db *db, ps_err *err)
{
    /* runs a batch holds are committed first (rec_set_batch) */
    return rec_flush(db, err) || rec_exec_sql(db, "BEGIN IMMEDIATE", err);
}

/* ------------------------------------------------------------------ */
/* Transactions                                                        */
/* ------------------------------------------------------------------ */

/* A batch commits after this many runs or seconds: few enough that the
 * write lock is not held long (other writers wait at most this, and a
 * process killed with -9 loses at most this), many enough that a sweep
 * of 100 us runs pays one commit per thousand. */
#define REC_BATCH_RUNS 1000
#define REC_BATCH_SECONDS 0.1

/* Commits the open batch, if any. pending: the run being written is in
 * batch_runs but not reported recorded yet (its rec_write fails with the
 * batch), so it is not one of rec_lost_runs. */
static int commit_batch(rec_db *db, int pending, ps_err *err)
{
    if (!db->batch_open)
        return PS_OK;
    db->batch_open = 0;
    int n = db->batch_runs;
    db->batch_runs = 0;
    if (sqlite3_get_autocommit(db->db)) {
        rec_sum_drop(db);
        return PS_OK; /* nothing open (cannot happen: runs release) */
    }
    ps_err e;
    sqlite3_stmt *commit = rec_stmt(db, ST_COMMIT, &e);
    /* the batch's summary rows (rec/sum.c) go in first */
    int kept = rec_sum_flush(db, &e) == PS_OK;
    if (kept && commit && rec_step_done(db, commit, &e) == PS_OK)
        return PS_OK;
    rec_sum_drop(db);
    if (!sqlite3_get_autocommit(db->db))
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
    db->lost_runs += n - pending;
    return ps_errf(err,
                   "%s (the %d runs since the sweep's last commit are lost)",
                   e.msg, n);
}

int rec_batch_commit(rec_db *db, ps_err *err)
{
    return commit_batch(db, 0, err);
}

int64_t rec_lost_runs(const rec_db *db)
{
    return db ? db->lost_runs : 0;
}

void rec_set_batch(rec_db *db, int on)
{
    db->batch_mode = on != 0;
}

int rec_run_begin(rec_db *db, ps_err *err)
{
    if (rec_reopen(db, err))
        return PS_ERR;
    /* a batch's runs go into the file: its ids are final when handed out */
    if (db->batch_mode && rec_publish(db, NULL, err))
        return PS_ERR;
    if (!db->batch_mode) {
        sqlite3_stmt *begin;
        if (rec_batch_commit(db, err) || !(begin = rec_stmt(db, ST_BEGIN, err)))
            return PS_ERR;
        return rec_step_done(db, begin, err);
    }
    if (!db->batch_open) {
        sqlite3_stmt *begin = rec_stmt(db, ST_BEGIN, err);
        if (!begin || rec_step_done(db, begin, err))
            return PS_ERR;
        db->batch_open = 1;
        db->batch_runs = 0;
        db->batch_t0 = rec_monotonic();
    }
    sqlite3_stmt *sp = rec_stmt(db, ST_SAVEPOINT, err);
    if (!sp || rec_step_done(db, sp, err))
        return PS_ERR;
    rec_sum_mark(db); /* the run's summary rows begin here */
    return PS_OK;
}

int rec_run_commit(rec_db *db, ps_err *err)
{
    if (!db->batch_open) {
        sqlite3_stmt *commit = rec_stmt(db, ST_COMMIT, err);
        return commit ? rec_step_done(db, commit, err) : PS_ERR;
    }
    sqlite3_stmt *release = rec_stmt(db, ST_RELEASE, err);
    if (!release || rec_step_done(db, release, err))
        return PS_ERR;
    if (++db->batch_runs >= REC_BATCH_RUNS ||
        rec_sum_pending(db) >= REC_SUM_MAX ||
        rec_monotonic() - db->batch_t0 >= REC_BATCH_SECONDS)
        return commit_batch(db, 1, err);
    return PS_OK;
}

void rec_run_rollback(rec_db *db)
{
    ps_err ignored;
    if (sqlite3_get_autocommit(db->db)) {
        /* SQLite rolled everything back (a full disk, an I/O error): a
         * batch's earlier runs went with it */
        if (db->batch_open)
            db->lost_runs += db->batch_runs;
        db->batch_open = 0;
        db->batch_runs = 0;
        rec_sum_drop(db);
        return;
    }
    if (db->batch_open) {
        sqlite3_stmt *to = rec_stmt(db, ST_ROLLBACK_TO, &ignored);
        sqlite3_stmt *release = to ? rec_stmt(db, ST_RELEASE, &ignored) : NULL;
        if (release && rec_step_done(db, to, &ignored) == PS_OK &&
            rec_step_done(db, release, &ignored) == PS_OK) {
            rec_sum_undo(db); /* the run's kept rows go with it */
            return;
        }
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
        rec_sum_drop(db);
        db->lost_runs += db->batch_runs;
        db->batch_open = 0;
        db->batch_runs = 0;
        return;
    }
    sqlite3_stmt *rollback = rec_stmt(db, ST_ROLLBACK, &ignored);
    if (rollback)
        rec_step_done(db, rollback, &ignored);
    else
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
}

int rec_scratch(rec_db *db, ps_err *err)
{
    /* the journal in memory (a failed run still rolls back) and no syncs:
     * a scratch file nobody reads if its writer dies (a sweep worker's:
     * the writer copies only finished chunks) */
    return publish(db, NULL, 0, 0, err) ||
                   rec_exec_sql(db, "PRAGMA journal_mode = MEMORY", err) ||
                   rec_exec_sql(db, "PRAGMA synchronous = OFF", err)
               ? PS_ERR
               : PS_OK;
}

int rec_flush(rec_db *db, ps_err *err)
{
    /* a new file that got no run yet exists from here on, empty (and
     * like a one-run file needs no connection at its path for that) */
    return db ? rec_batch_commit(db, err) || publish(db, NULL, 1, 1, err)
              : PS_OK;
}

void rec_forked_release(rec_db *db)
{
    /* sqlite3_db_release_memory drops unpinned cache pages: no I/O, no
     * lock */
    if (db && db->db)
        sqlite3_db_release_memory(db->db);
}

int rec_close(rec_db *db, ps_err *err)
{
    if (!db)
        return PS_OK;
    ps_err e;
    int rc = db->readonly ? PS_OK : rec_flush(db, &e);
    if (rc && err)
        *err = e;
    rec_free_handle(db);
    return rc;
}
