/* The timeline's row source (issue 12): an eponymous virtual table,
 * pipesim_rows, that reads the block of rows being inserted straight from
 * C memory, so a block of REC_ROWS rows goes in with one
 * INSERT ... SELECT ... FROM pipesim_rows and no sqlite3_bind_* call per
 * value (binding and the multi-row VALUES co-routine were a quarter of the
 * writer's instructions per row; BENCHMARKS.md). It exists only on
 * pipesim's own connections, for that statement: nothing in a database
 * file refers to it. This file says how its rows read and holds the
 * INSERTs that read them; rec/vtab.c has the rest of the table. */
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

/* Each timeline table's INSERT from pipesim_rows (rec/rows.c): which of
 * a rec_row's fields go to which column, and which integers are indexes,
 * NULL below 0 ("none" in programs: mb -1 of an optimizer step). OR FAIL:
 * a NOT NULL violation stops the statement without undoing its earlier
 * rows, so SQLite keeps no statement journal for the block (the default
 * ABORT copies each page the block changes first); any failure fails the
 * run, whose transaction or savepoint takes the partial block back with
 * the rest. */
static const struct {
    const char *sql;
    unsigned nulls; /* bit k: i<k> */
} rows_def[NROWS] = {
    [ROWS_EVENT] =
        {"INSERT OR FAIL INTO event_row(rank, kind, stage, chunk, mb, "
         "t_start, t_end) SELECT i0, i1, i2, i3, i4, d0, d1 "
         "FROM pipesim_rows",
         1u << 2 | 1u << 3 | 1u << 4},
    [ROWS_TRANSFER] =
        {"INSERT OR FAIL INTO transfer_row(src, dst, bytes, t_start, "
         "t_end, kind, mb, tag) SELECT i0, i1, d0, d1, d2, i2, "
         "i3, i4 FROM pipesim_rows",
         1u << 3 | 1u << 4},
    [ROWS_MEMORY] = {"INSERT OR FAIL INTO memory_row(rank, t, bytes) SELECT "
                     "i0, d0, d1 FROM pipesim_rows",
                     0},
};

const char *rec_rows_sql(int table, unsigned *nulls)
{
    *nulls = rows_def[table].nulls;
    return rows_def[table].sql;
}

int rec_rows_insert(rec_db *db, int table, const rec_row *r, int32_t n,
                    ps_err *err)
{
    rowbuf *rb = &db->rows[table];
    if (n == 0)
        return PS_OK;
    db->vt.rows = r;
    db->vt.n = n;
    db->vt.nulls = rb->nulls;
    rb->count += n;
    int rc = rec_step_done(db, rb->st, err);
    db->vt.rows = NULL;
    db->vt.n = 0;
    if (rc) {
        /* kept for rec_write: a streamed run's failure is reported after
         * its rollback, which resets the connection's error code */
        db->rows_code = sqlite3_errcode(db->db);
        return PS_ERR;
    }
    rb->last = sqlite3_last_insert_rowid(db->db);
    return PS_OK;
}
