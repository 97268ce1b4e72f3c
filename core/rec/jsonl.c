/* Byte counters as JSON Lines (bytes_log, issue 25): one object per
 * message end, written by SQLite's json_object on an in-memory connection
 * (no hand-written JSON encoder), from live mode's socket counts or from a
 * recorded run's transfer rows. */
#include <sqlite3.h>
#include <stdio.h>

#include "rec/impl.h"
#include "rec/rec.h"

/* One object: run, iteration, rank, op, peer, msg, step, mb, kind, bytes,
 * sent, received, t. NULL step, mb or msg when negative. */
#define OBJECT_SQL                                                             \
    "json_object('run', ?1, 'iteration', ?2, 'rank', ?3, 'op', ?4, 'peer', "   \
    "?5, 'msg', ?6, 'step', ?7, 'mb', ?8, 'kind', ?9, 'bytes', ?10, 'sent', "  \
    "?11, 'received', ?12, 't', ?13)"

static int open_mem(sqlite3 **db, ps_err *err)
{
    if (sqlite3_open_v2(":memory:", db, SQLITE_OPEN_READWRITE, NULL) !=
        SQLITE_OK) {
        sqlite3_close(*db);
        return ps_errf(err, "bytes_log: cannot open SQLite");
    }
    return PS_OK;
}

static void put_opt(sqlite3_stmt *st, int i, int64_t v)
{
    if (v >= 0)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

int rec_bytes_log(const char *path, int append, const rec_bytes_row *rows,
                  int64_t n, ps_err *err)
{
    FILE *f = fopen(path, append ? "a" : "w");
    if (!f)
        return ps_errf(err, "bytes_log: cannot write %s", path);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = open_mem(&db, err);
    if (rc == PS_OK && sqlite3_prepare_v2(db, "SELECT " OBJECT_SQL, -1, &st,
                                          NULL) != SQLITE_OK)
        rc = ps_errf(err, "bytes_log: %s", sqlite3_errmsg(db));
    for (int64_t k = 0; rc == PS_OK && k < n; k++) {
        const rec_bytes_row *r = &rows[k];
        sqlite3_bind_int64(st, 1, r->run);
        sqlite3_bind_int64(st, 2, r->iteration);
        sqlite3_bind_int64(st, 3, r->rank);
        sqlite3_bind_text(st, 4, r->send ? "send" : "recv", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, r->peer);
        put_opt(st, 6, r->msg);
        put_opt(st, 7, r->step);
        put_opt(st, 8, r->mb);
        sqlite3_bind_text(st, 9, r->kind, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 10, r->bytes);
        sqlite3_bind_double(st, 11, r->sent);
        sqlite3_bind_double(st, 12, r->received);
        sqlite3_bind_double(st, 13, r->t);
        if (sqlite3_step(st) != SQLITE_ROW)
            rc = ps_errf(err, "bytes_log: %s", sqlite3_errmsg(db));
        else if (fprintf(f, "%s\n", (const char *)sqlite3_column_text(st, 0)) <
                 0)
            rc = ps_errf(err, "bytes_log: cannot write %s", path);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (fclose(f) && rc == PS_OK)
        rc = ps_errf(err, "bytes_log: cannot write %s", path);
    return rc;
}

/* A recorded run's transfers as message ends: the sender's at the
 * transfer's end, the receiver's too, each with the rank's running sums
 * in time order. */
static const char run_sql[] =
    "WITH x AS (SELECT rowid AS k, src, dst, bytes, t_end, kind, mb, tag "
    "FROM transfer WHERE run = ?1), ev AS ("
    "SELECT k, src AS rank, 1 AS send, dst AS peer, bytes, bytes AS ds, 0 "
    "AS dr, t_end AS t, kind, mb, tag FROM x UNION ALL "
    "SELECT k, dst, 0, src, bytes, 0, bytes, t_end, kind, mb, tag FROM x) "
    "SELECT json_object('run', ?1, 'iteration', 0, 'rank', rank, 'op', "
    "CASE send WHEN 1 THEN 'send' ELSE 'recv' END, 'peer', peer, 'msg', "
    "NULL, 'step', CASE WHEN kind = 'coll' THEN tag END, 'mb', "
    "CASE WHEN mb >= 0 THEN mb END, 'kind', kind, 'bytes', bytes, 'sent', "
    "sum(ds) OVER w, 'received', sum(dr) OVER w, 't', t) FROM ev "
    "WINDOW w AS (PARTITION BY rank ORDER BY t, k, send DESC ROWS "
    "UNBOUNDED PRECEDING) ORDER BY t, rank, k";

int rec_bytes_log_run(rec_db *db, int64_t run, const char *path, int append,
                      ps_err *err)
{
    if (rec_reopen(db, err))
        return PS_ERR;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->db, run_sql, -1, &st, NULL) != SQLITE_OK)
        return ps_errf(err, "bytes_log: %s", sqlite3_errmsg(db->db));
    FILE *f = fopen(path, append ? "a" : "w");
    int rc = f ? PS_OK : ps_errf(err, "bytes_log: cannot write %s", path);
    sqlite3_bind_int64(st, 1, run);
    int step;
    while (rc == PS_OK && (step = sqlite3_step(st)) == SQLITE_ROW)
        if (fprintf(f, "%s\n", (const char *)sqlite3_column_text(st, 0)) < 0)
            rc = ps_errf(err, "bytes_log: cannot write %s", path);
    if (rc == PS_OK && step != SQLITE_DONE)
        rc = ps_errf(err, "bytes_log: %s", sqlite3_errmsg(db->db));
    sqlite3_finalize(st);
    if (f && fclose(f) && rc == PS_OK)
        rc = ps_errf(err, "bytes_log: cannot write %s", path);
    return rc;
}
