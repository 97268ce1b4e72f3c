/* The recorder's read side: opening a database read-only (waiting for a
 * writer that is creating it, refusing old or foreign files) and the
 * rec_query API the reports and exporters read through. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rec/impl.h"

/* 1 when the directory of path cannot be written by this process. */
static int dir_readonly(const char *path)
{
    char dir[4200];
    return access(rec_dir_of(path, dir, sizeof dir), W_OK) != 0 &&
           errno != ENOENT;
}

/* The connection of a reader: read-only, and immutable when no writer
 * can be at work, that is when the file has no log and its directory is
 * read-only (no writer could create one): SQLite could not create the
 * -shm a read-only connection to a WAL file needs and would fail with
 * "unable to open database file". */
static int open_reader(rec_db *db, ps_err *err)
{
    db->had = rec_sidecars(db->path);
    int frozen = !(db->had & REC_HAD_WAL) && dir_readonly(db->path);
    char *uri = rec_uri(db->path, frozen ? "mode=ro&immutable=1" : "mode=ro");
    if (!uri)
        return ps_errf(err, "%s: out of memory", db->path);
    int rc = sqlite3_open_v2(uri, &db->db,
                             SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    free(uri);
    if (rc == SQLITE_OK)
        return PS_OK;
    if ((db->had & REC_HAD_WAL) && !(db->had & REC_HAD_SHM) &&
        dir_readonly(db->path))
        return ps_errf(err,
                       "%s: cannot read it: its log (%s-wal) needs a %s-shm "
                       "file beside it, and its directory is read-only (copy "
                       "the database with its -wal file to a writable "
                       "directory, or have its owner open it once with "
                       "sqlite3 to fold the log in)",
                       db->path, db->path, db->path);
    return rec_sql_fail(db, "cannot open", err);
}

rec_db *rec_open_read(const char *path, ps_err *err)
{
    int missing = rec_check_path(path, err);
    if (missing > 0)
        ps_errf(err, "%s: no such file", path);
    if (missing)
        return NULL;
    rec_db *db = rec_new_handle(path, err);
    if (!db)
        return NULL;
    db->readonly = 1;
    if (open_reader(db, err))
        goto fail;
    sqlite3_busy_handler(db->db, rec_busy_handler, db);
    int version, tables, objects;
    if (rec_inspect(db, &version, &tables, &objects, err))
        goto fail;
    /* An empty database is one a writer has just created and not yet
     * given its schema (rec_open creates it in one transaction right
     * after): wait for it rather than call it foreign. */
    double t0 = rec_monotonic();
    for (int tries = 0; version == 0 && objects == 0; tries++) {
        if (rec_monotonic() - t0 >= REC_CREATE_WAIT_S) {
            ps_errf(err,
                    "%s: empty database, not yet a pipesim database (no "
                    "writer created its tables within %d s)",
                    path, REC_CREATE_WAIT_S);
            goto fail;
        }
        rec_backoff(db, tries);
        if (rec_inspect(db, &version, &tables, &objects, err))
            goto fail;
    }
    if (version >= 1 && version < REC_SCHEMA_VERSION &&
        tables == REC_NTABLES_AT(version)) {
        ps_errf(err,
                "%s: schema version %d (before %s), this "
                "pipesim reads %d; writing one run to it upgrades it in "
                "place (pipesim run SCENARIO -o %s)",
                path, version,
                version == 1   ? "the memory 'fits' columns"
                : version == 2 ? "the run 'tp' columns"
                : version == 3 ? "the 'tp_comm' columns"
                : version == 4 ? "the run 'sweep' columns"
                : version == 5 ? "the collective 'protocol' columns"
                : version == 6 ? "the timeline's rowid spans"
                : version == 7 ? "the run's efficiency columns"
                : version == 8 ? "the 'rank_member' table"
                : version == 9 ? "the run 'backend' columns"
                               : "the run 'folded' column",
                REC_SCHEMA_VERSION, path);
        goto fail;
    }
    if (version != 0 && version != REC_SCHEMA_VERSION &&
        tables == REC_NTABLES_AT(version)) {
        ps_errf(err, "%s: schema version %d, this pipesim reads %d", path,
                version, REC_SCHEMA_VERSION);
        goto fail;
    }
    if (version != REC_SCHEMA_VERSION || tables != REC_NTABLES) {
        ps_errf(err, "%s: not a pipesim database", path);
        goto fail;
    }
    return db;
fail:
    rec_free_handle(db);
    return NULL;
}

int rec_run_count(rec_db *db, int64_t *n, ps_err *err)
{
    sqlite3_stmt *st = NULL;
    *n = 0;
    if (db->reopen) { /* a new file's first run only (rec/txn.c) */
        *n = db->published_runs;
        return PS_OK;
    }
    if (sqlite3_prepare_v2(db->db, "SELECT count(*) FROM run", -1, &st, NULL) !=
            SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return rec_sql_fail(db, "counting runs", err);
    }
    *n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return PS_OK;
}

const char *rec_path(const rec_db *db)
{
    return db->path;
}

rec_query *rec_query_new(rec_db *db, const char *sql, ps_err *err)
{
    rec_query *q = calloc(1, sizeof *q);
    if (!q) {
        ps_errf(err, "%s: out of memory", db->path);
        return NULL;
    }
    q->db = db;
    if (rec_reopen(db, err) || rec_schema_rest(db, err)) {
        free(q);
        return NULL;
    }
    if (sqlite3_prepare_v2(db->db, sql, -1, &q->st, NULL) != SQLITE_OK) {
        rec_sql_fail(db, "cannot read", err);
        sqlite3_finalize(q->st);
        free(q);
        return NULL;
    }
    return q;
}

int rec_query_bind_int(rec_query *q, int index, int64_t value)
{
    return sqlite3_bind_int64(q->st, index, value) == SQLITE_OK ? PS_OK
                                                                : PS_ERR;
}

int rec_query_bind_text(rec_query *q, int index, const char *value)
{
    return sqlite3_bind_text(q->st, index, value, -1, SQLITE_TRANSIENT) ==
                   SQLITE_OK
               ? PS_OK
               : PS_ERR;
}

int rec_query_step(rec_query *q, ps_err *err)
{
    int rc = sqlite3_step(q->st);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc == SQLITE_DONE)
        return 0;
    return rec_sql_fail(q->db, "cannot read", err);
}

int rec_query_isnull(rec_query *q, int col)
{
    return sqlite3_column_type(q->st, col) == SQLITE_NULL;
}

int64_t rec_query_int(rec_query *q, int col)
{
    return sqlite3_column_int64(q->st, col);
}

double rec_query_double(rec_query *q, int col)
{
    return sqlite3_column_double(q->st, col);
}

const char *rec_query_text(rec_query *q, int col)
{
    const unsigned char *s = sqlite3_column_text(q->st, col);
    return s ? (const char *)s : "";
}

void rec_query_free(rec_query *q)
{
    if (!q)
        return;
    sqlite3_finalize(q->st);
    free(q);
}
