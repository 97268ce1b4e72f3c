/* The recorder's read side: opening a database read-only (waiting for a
 * writer that is creating it, refusing old or foreign files) and the
 * rec_query API the reports and exporters read through. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rec/impl.h"

rec_db *rec_open_read(const char *path, ps_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT)
            ps_errf(err, "%s: no such file", path);
        else
            ps_errf(err, "%s: %s", path, strerror(errno));
        return NULL;
    }
    rec_db *db = rec_new_handle(path, err);
    if (!db)
        return NULL;
    db->readonly = 1;
    if (sqlite3_open_v2(path, &db->db, SQLITE_OPEN_READONLY, NULL) !=
        SQLITE_OK) {
        rec_sql_fail(db, "cannot open", err);
        goto fail;
    }
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
    if (version >= 1 && version < REC_SCHEMA_VERSION && tables == REC_NTABLES) {
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
                               : "the run's efficiency columns",
                REC_SCHEMA_VERSION, path);
        goto fail;
    }
    if (version != 0 && version != REC_SCHEMA_VERSION &&
        tables == REC_NTABLES) {
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
