/* The timeline's row source (issue 12): an eponymous virtual table,
 * pipesim_rows, that reads the block of rows being inserted straight from
 * C memory, so a block of REC_ROWS rows goes in with one
 * INSERT ... SELECT ... FROM pipesim_rows and no sqlite3_bind_* call per
 * value (binding and the multi-row VALUES co-routine were a quarter of the
 * writer's instructions per row; BENCHMARKS.md). It exists only on
 * pipesim's own connections, for that statement: nothing in a database
 * file refers to it. */
#include <string.h>

#include "rec_impl.h"

/* The columns, rec_row's fields in order: i0..i4 the integers, d0..d2
 * the reals. No declared types: the target table's affinity applies as it
 * did to bound values. */
#define ROWS_DECL "CREATE TABLE x(i0, i1, i2, i3, i4, d0, d1, d2)"

typedef struct cursor {
    sqlite3_vtab_cursor base;
    const rec_row *row; /* the block, db->vt_rows when the scan began */
    int32_t n, k;       /* its rows, and the current one */
    unsigned nulls;     /* integer columns whose values below 0 are NULL */
} cursor;

typedef struct vtab {
    sqlite3_vtab base;
    rec_db *db;
} vtab;

static int rows_connect(sqlite3 *c, void *aux, int argc,
                        const char *const *argv, sqlite3_vtab **out,
                        char **errmsg)
{
    (void)argc;
    (void)argv;
    (void)errmsg;
    int rc = sqlite3_declare_vtab(c, ROWS_DECL);
    if (rc != SQLITE_OK)
        return rc;
    /* not from triggers or views a file might carry: only pipesim's own
     * statements read it */
    sqlite3_vtab_config(c, SQLITE_VTAB_DIRECTONLY);
    vtab *t = sqlite3_malloc(sizeof *t);
    if (!t)
        return SQLITE_NOMEM;
    memset(t, 0, sizeof *t);
    t->db = aux;
    *out = &t->base;
    return SQLITE_OK;
}

static int rows_disconnect(sqlite3_vtab *t)
{
    sqlite3_free(t);
    return SQLITE_OK;
}

/* A full scan, the only plan there is. */
static int rows_best_index(sqlite3_vtab *t, sqlite3_index_info *info)
{
    (void)t;
    info->estimatedCost = REC_ROWS;
    info->estimatedRows = REC_ROWS;
    return SQLITE_OK;
}

static int rows_open(sqlite3_vtab *t, sqlite3_vtab_cursor **out)
{
    (void)t;
    cursor *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static int rows_close(sqlite3_vtab_cursor *c)
{
    sqlite3_free(c);
    return SQLITE_OK;
}

static int rows_filter(sqlite3_vtab_cursor *base, int idx, const char *idxstr,
                       int argc, sqlite3_value **argv)
{
    (void)idx;
    (void)idxstr;
    (void)argc;
    (void)argv;
    cursor *c = (cursor *)base;
    const rec_db *db = ((vtab *)base->pVtab)->db;
    c->row = db->vt_rows;
    c->n = db->vt_n;
    c->nulls = db->vt_nulls;
    c->k = 0;
    return SQLITE_OK;
}

static int rows_next(sqlite3_vtab_cursor *base)
{
    ((cursor *)base)->k++;
    return SQLITE_OK;
}

static int rows_eof(sqlite3_vtab_cursor *base)
{
    const cursor *c = (const cursor *)base;
    return c->k >= c->n;
}

static int rows_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col)
{
    const cursor *c = (const cursor *)base;
    const rec_row *r = &c->row[c->k];
    if (col >= 5)
        sqlite3_result_double(ctx, r->d[col - 5]);
    else if (r->i[col] < 0 && (c->nulls >> col & 1))
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int64(ctx, r->i[col]);
    return SQLITE_OK;
}

static int rows_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid)
{
    *rowid = ((const cursor *)base)->k;
    return SQLITE_OK;
}

/* Eponymous only (no xCreate): CREATE VIRTUAL TABLE cannot name it, so it
 * never enters a file's schema. */
static const sqlite3_module rows_module = {
    .iVersion = 0,
    .xConnect = rows_connect,
    .xBestIndex = rows_best_index,
    .xDisconnect = rows_disconnect,
    .xOpen = rows_open,
    .xClose = rows_close,
    .xFilter = rows_filter,
    .xNext = rows_next,
    .xEof = rows_eof,
    .xColumn = rows_column,
    .xRowid = rows_rowid,
};

int rec_rows_module(rec_db *db, ps_err *err)
{
    if (db->vt_ok)
        return PS_OK;
    if (sqlite3_create_module_v2(db->db, "pipesim_rows", &rows_module, db,
                                 NULL) != SQLITE_OK)
        return rec_sql_fail(db, "cannot prepare the inserts", err);
    db->vt_ok = 1;
    return PS_OK;
}
