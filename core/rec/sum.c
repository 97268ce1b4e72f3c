/* A sweep batch's summary rows (issue 12): the stage and rank_stat rows of
 * the runs of an open batch (rec/txn.c) are kept in C memory and go in
 * when the batch commits, each table's with one
 * INSERT ... SELECT ... FROM pipesim_summary (an eponymous virtual table
 * reading the kept rows, as rec/rows.c's pipesim_rows does for timelines),
 * instead of two statement executions and 110 bound values per run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "rec/impl.h"

/* The columns, rec_sum_row's fields in order: c0..c5 the integers,
 * c6..c14 the reals. No declared types: the target table's affinity
 * applies as it did to bound values. */
#define SUM_DECL                                                               \
    "CREATE TABLE x(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, "   \
    "c13, c14)"

/* Each table's INSERT: which of a row's values go to which column. */
static const char *const sum_sql[NSUM] = {
    [SUM_STAGE] = "INSERT INTO stage(run, stage, rank, chunk, first_layer, "
                  "last_layer, fwd_flops, params, fwd_time, bwd_time, "
                  "act_bytes, out_bytes, exposed_comm, tp_comm, tp_exposed) "
                  "SELECT c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, "
                  "c12, c13, c14 FROM pipesim_summary",
    [SUM_RANK] = "INSERT INTO rank_stat(run, rank, busy, bubble, "
                 "static_memory, peak_memory, t_peak, exposed_comm, "
                 "capacity, fits, tp_comm, tp_exposed) SELECT c0, c1, c6, "
                 "c7, c8, c9, c10, c11, c12, c2, c13, c14 FROM "
                 "pipesim_summary",
};

/* NaN reals and integers flagged in a row's nulls are NULL, as rec/rec.c
 * binds them */
static int sum_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col)
{
    const rec_vtab_cursor *c = (const rec_vtab_cursor *)base;
    const rec_sum_row *r = (const rec_sum_row *)c->rows + c->k;
    if (col >= REC_SUM_INTS) {
        double v = r->d[col - REC_SUM_INTS];
        if (isnan(v))
            sqlite3_result_null(ctx);
        else
            sqlite3_result_double(ctx, v);
    } else if (r->nulls >> col & 1) {
        sqlite3_result_null(ctx);
    } else {
        sqlite3_result_int64(ctx, r->i[col]);
    }
    return SQLITE_OK;
}

static const rec_vtab_kind sum_kind = {
    .name = "pipesim_summary",
    .decl = SUM_DECL,
    .max_rows = REC_SUM_MAX,
    .column = sum_column,
};

rec_sum_row *rec_sum_add(rec_db *db, int table, int32_t n)
{
    rec_sums *s = &db->sums[table];
    if (n > INT32_MAX - s->n)
        return NULL;
    if (VEC_RESERVE(s->rows, s->cap, (size_t)s->n + (size_t)n))
        return NULL;
    rec_sum_row *r = &s->rows[s->n];
    s->n += n;
    memset(r, 0, (size_t)n * sizeof *r);
    return r;
}

int32_t rec_sum_pending(const rec_db *db)
{
    int32_t n = 0;
    for (int t = 0; t < NSUM; t++)
        n += db->sums[t].n;
    return n;
}

void rec_sum_mark(rec_db *db)
{
    for (int t = 0; t < NSUM; t++)
        db->sums[t].mark = db->sums[t].n;
}

void rec_sum_undo(rec_db *db)
{
    for (int t = 0; t < NSUM; t++)
        db->sums[t].n = db->sums[t].mark;
}

void rec_sum_drop(rec_db *db)
{
    for (int t = 0; t < NSUM; t++)
        db->sums[t].n = db->sums[t].mark = 0;
}

void rec_sum_free(rec_db *db)
{
    for (int t = 0; t < NSUM; t++) {
        free(db->sums[t].rows);
        db->sums[t].rows = NULL;
        db->sums[t].n = db->sums[t].mark = db->sums[t].cap = 0;
        if (db->sums[t].st)
            sqlite3_finalize(db->sums[t].st);
        db->sums[t].st = NULL;
    }
}

int rec_sum_flush(rec_db *db, ps_err *err)
{
    for (int t = 0; t < NSUM; t++) {
        rec_sums *s = &db->sums[t];
        if (s->n == 0)
            continue;
        if (rec_vtab_register(db, &db->vs, &sum_kind, err))
            return PS_ERR;
        if (!s->st && sqlite3_prepare_v3(db->db, sum_sql[t], -1,
                                         SQLITE_PREPARE_PERSISTENT, &s->st,
                                         NULL) != SQLITE_OK)
            return rec_sql_fail(db, "cannot prepare the inserts", err);
        db->vs.rows = s->rows;
        db->vs.n = s->n;
        int rc = rec_step_done(db, s->st, err);
        db->vs.rows = NULL;
        db->vs.n = 0;
        if (rc)
            return PS_ERR;
        s->n = s->mark = 0;
    }
    return PS_OK;
}
