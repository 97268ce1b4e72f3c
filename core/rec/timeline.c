/* A run's timeline rows: the event, transfer and memory tables filled
 * block by block through pipesim_rows (rec/rows.c), from the engine's
 * completion hook while a run executes (rec/stream.c) or from stored
 * programs afterwards, and the run's rowid span in each. The run row,
 * its summary rows and the transaction are rec.c's. */
#include "rec/rec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "rec/impl.h"
#include "sim/mem.h"

/* The INSERT of a timeline table, prepared on first use. */
static rowbuf *rows(rec_db *db, enum rows_id id, ps_err *err)
{
    rowbuf *rb = &db->rows[id];
    if (!rb->st) {
        if (rec_rows_module(db, err))
            return NULL;
        if (sqlite3_prepare_v3(db->db, rec_rows_sql(id, &rb->nulls), -1,
                               SQLITE_PREPARE_PERSISTENT, &rb->st,
                               NULL) != SQLITE_OK) {
            rec_sql_fail(db, "cannot prepare the inserts", err);
            return NULL;
        }
        rb->n = 0;
    }
    return rb;
}

/* Inserts the rows of the caller's buffer. */
static int rows_flush(rec_db *db, rowbuf *rb, ps_err *err)
{
    int32_t n = rb->n;
    rb->n = 0;
    return rec_rows_insert(db, (int)(rb - db->rows), rb->buf, n, err);
}

/* event.kind by code: the code is the op's enum prog_kind, the name what
 * the event view shows (rows of the event_kind table, kept in step by
 * ensure_kinds). */
static const char *const event_kinds[] = {"F",   "B",    "W",    "R",
                                          "OPT", "COLL", "FB.F", "FB.B"};
#define NEVENT_KINDS (int)(sizeof event_kinds / sizeof event_kinds[0])

/* transfer.kind by code: what a SEND moves, from the kind of the op it
 * serves. */
enum { XFER_ACT, XFER_GRAD, XFER_COLL };
static const char *const transfer_kinds[] = {"act", "grad", "coll"};

static int transfer_kind(unsigned kind)
{
    return kind == PROG_F ? XFER_ACT : kind == PROG_B ? XFER_GRAD : XFER_COLL;
}

/* Adds the kind names a file made by an older pipesim lacks, once per
 * handle, inside the run's transaction: the schema holds the names of
 * its day, and a code without a name would show as a number. */
static int ensure_kinds(rec_db *db, ps_err *err)
{
    if (db->kinds_ok)
        return PS_OK;
    char sql[1024];
    int len = snprintf(sql, sizeof sql,
                       "INSERT OR IGNORE INTO event_kind "
                       "VALUES ");
    for (int i = 0; i < NEVENT_KINDS; i++)
        len += snprintf(sql + len, sizeof sql - (size_t)len, "%s(%d, '%s')",
                        i ? ", " : "", i, event_kinds[i]);
    len += snprintf(sql + len, sizeof sql - (size_t)len,
                    "; INSERT OR IGNORE INTO transfer_kind VALUES ");
    for (int i = 0; i <= XFER_COLL; i++)
        len += snprintf(sql + len, sizeof sql - (size_t)len, "%s(%d, '%s')",
                        i ? ", " : "", i, transfer_kinds[i]);
    if (sqlite3_exec(db->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return rec_sql_fail(db, "run not recorded", err);
    db->kinds_ok = 1;
    return PS_OK;
}

/* The row's slot: in the writer thread's next block while a stream has
 * one (rec/writer.c), else in the table's buffer, inserted when full
 * (put_row). */
static inline rec_row *row_slot(rec_db *db, int table)
{
    if (db->writing)
        return rec_writer_row(db, table);
    rowbuf *rb = &db->rows[table];
    return &rb->buf[rb->n];
}

static inline int put_row(rec_db *db, int table, ps_err *err)
{
    if (db->writing) {
        rec_writer_commit_row(db, table);
        return PS_OK;
    }
    rowbuf *rb = &db->rows[table];
    return ++rb->n == REC_ROWS ? rows_flush(db, rb, err) : PS_OK;
}

int rec_event_row(rec_db *db, int32_t rank, const prog_op *op, ps_err *err)
{
    rec_row *r = row_slot(db, ROWS_EVENT);
    r->i[0] = rank;
    r->i[1] = op->kind;
    r->i[2] = op->stage;
    r->i[3] = op->chunk;
    r->i[4] = op->mb;
    r->d[0] = op->t_start;
    r->d[1] = op->t_end;
    return put_row(db, ROWS_EVENT, err);
}

int rec_transfer_row(rec_db *db, int32_t src, const prog_op *op, ps_err *err)
{
    rec_row *r = row_slot(db, ROWS_TRANSFER);
    r->i[0] = src;
    r->i[1] = op->peer;
    r->i[2] = transfer_kind(op->kind);
    r->i[3] = op->mb;
    r->i[4] = op->tag;
    r->d[0] = op->bytes;
    r->d[1] = op->t_start;
    r->d[2] = op->t_end;
    return put_row(db, ROWS_TRANSFER, err);
}

int rec_memory_row(rec_db *db, int32_t rank, double t, double bytes,
                   ps_err *err)
{
    rec_row *r = row_slot(db, ROWS_MEMORY);
    r->i[0] = rank;
    r->d[0] = t;
    r->d[1] = bytes;
    return put_row(db, ROWS_MEMORY, err);
}

int rec_timeline_start(rec_db *db, ps_err *err)
{
    if (ensure_kinds(db, err) || !rows(db, ROWS_EVENT, err) ||
        !rows(db, ROWS_TRANSFER, err) || !rows(db, ROWS_MEMORY, err))
        return PS_ERR;
    for (int i = 0; i < NROWS; i++) {
        db->rows[i].n = 0; /* rows bound by a run that failed */
        db->rows[i].count = 0;
    }
    return PS_OK;
}

static int write_ops(rec_db *db, const prog_set *ps, ps_err *err)
{
    for (int32_t l = 0; l < ps->nlanes; l++) {
        const prog_lane *lane = &ps->lanes[l];
        for (int32_t i = 0; i < lane->n; i++) {
            const prog_op *op = &lane->ops[i];
            if ((op->type == PROG_COMPUTE &&
                 rec_event_row(db, lane->rank, op, err)) ||
                (op->type == PROG_SEND &&
                 rec_transfer_row(db, lane->rank, op, err)))
                return PS_ERR;
        }
    }
    return PS_OK;
}

typedef struct mem_ctx {
    rec_db *db;
    ps_err *err;
    int rc; /* first failure; later changes are skipped */
} mem_ctx;

static void mem_row(void *vctx, int32_t rank, double t, double bytes)
{
    mem_ctx *c = vctx;
    if (!c->rc)
        c->rc = rec_memory_row(c->db, rank, t, bytes, c->err);
}

/* The memory rows of a payload of stored programs that was not streamed
 * (unit tests and tools holding executed programs): mem_ledger replays
 * them. A streamed run has its rows from the engine's mem_change as the
 * ops ran (rec/stream.c), the same rows rank by rank, and no second pass. */
static int write_memory(rec_db *db, const rec_payload *p, ps_err *err)
{
    const prog_set *ps = p->progs;
    if (ps->nranks > db->mem_cap) {
        mem_rank *m = realloc(db->mem, (size_t)ps->nranks * sizeof *m);
        if (!m)
            return ps_errf(err, "%s: out of memory", db->path);
        db->mem = m;
        db->mem_cap = ps->nranks;
    }
    mem_ctx c = {db, err, PS_OK};
    rowbuf *rb = rows(db, ROWS_MEMORY, err);
    if (!rb)
        return PS_ERR;
    if (mem_ledger(ps, p->static_memory, db->mem, mem_row, &c, err))
        return PS_ERR;
    if (c.rc)
        return PS_ERR;
    return rows_flush(db, rb, err);
}

/* The run's rowid range in each timeline table (NULLs: no rows). */
static int write_span(rec_db *db, int64_t id, ps_err *err)
{
    sqlite3_stmt *st = rec_stmt(db, ST_SPAN, err);
    if (!st)
        return PS_ERR;
    sqlite3_bind_int64(st, 1, id);
    for (int i = 0; i < NROWS; i++) {
        const rowbuf *rb = &db->rows[i];
        if (rb->count > 0) {
            sqlite3_bind_int64(st, 2 + 2 * i, rb->last - rb->count + 1);
            sqlite3_bind_int64(st, 3 + 2 * i, rb->last);
        } else {
            sqlite3_bind_null(st, 2 + 2 * i);
            sqlite3_bind_null(st, 3 + 2 * i);
        }
    }
    return rec_step_done(db, st, err);
}

int rec_timeline_write(rec_db *db, const rec_payload *p, int streamed,
                       int64_t id, ps_err *err)
{
    /* streamed runs (rec/stream.c) have their event, transfer and memory
     * rows in */
    if (p->progs && !streamed &&
        (rec_timeline_start(db, err) || write_ops(db, p->progs, err)))
        return PS_ERR;
    if ((p->progs || streamed) &&
        (rows_flush(db, &db->rows[ROWS_EVENT], err) ||
         rows_flush(db, &db->rows[ROWS_TRANSFER], err) ||
         (streamed ? rows_flush(db, &db->rows[ROWS_MEMORY], err)
                   : write_memory(db, p, err)) ||
         write_span(db, id, err)))
        return PS_ERR;
    return PS_OK;
}
