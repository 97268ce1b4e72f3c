/* The timeline's row source (issue 12): an eponymous virtual table,
 * pipesim_rows, that reads the block of rows being inserted straight from
 * C memory, so a block of REC_ROWS rows goes in with one
 * INSERT ... SELECT ... FROM pipesim_rows and no sqlite3_bind_* call per
 * value (binding and the multi-row VALUES co-routine were a quarter of the
 * writer's instructions per row; BENCHMARKS.md). It exists only on
 * pipesim's own connections, for that statement: nothing in a database
 * file refers to it. This file says how its rows read; rec/vtab.c has the
 * rest of the table. */
#include "rec/impl.h"

/* The columns, rec_row's fields in order: i0..i4 the integers, d0..d2
 * the reals. No declared types: the target table's affinity applies as it
 * did to bound values. */
#define ROWS_DECL "CREATE TABLE x(i0, i1, i2, i3, i4, d0, d1, d2)"

/* NULL for an integer below 0 in a column flagged in the scan's nulls */
static int rows_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col)
{
    const rec_vtab_cursor *c = (const rec_vtab_cursor *)base;
    const rec_row *r = (const rec_row *)c->rows + c->k;
    if (col >= 5)
        sqlite3_result_double(ctx, r->d[col - 5]);
    else if (r->i[col] < 0 && (c->nulls >> col & 1))
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int64(ctx, r->i[col]);
    return SQLITE_OK;
}

static const rec_vtab_kind rows_kind = {
    .name = "pipesim_rows",
    .decl = ROWS_DECL,
    .max_rows = REC_ROWS,
    .column = rows_column,
};

int rec_rows_module(rec_db *db, ps_err *err)
{
    return rec_vtab_register(db, &db->vt, &rows_kind, err);
}

int rec_rows_module_on(sqlite3 *c, rec_vtab_scan *scan)
{
    return rec_vtab_register_on(c, scan, &rows_kind);
}
