/* The recorder's streaming write path (issue 12): the engine's completion
 * hook (eng_sink, sim/eng.h) turns finished ops into batched event and
 * transfer rows and ledger changes into memory rows inside the run's
 * transaction, which rec_write (rec/rec.c) completes and commits, or
 * rec_stream_cancel (rec/rec.c, below both) drops. The per-op
 * path copies each row into a block of REC_ROWS rows, which one INSERT reads
 * through the pipesim_rows virtual table (rec/rows.c). */
#include <stdlib.h>
#include <string.h>

#include "rec/impl.h"
#include "sim/eng.h"

static void stream_op(void *ctx, const eng_done *d)
{
    rec_db *db = ctx;
    if (db->stream_rc || !db->streaming)
        return;
    const prog_op *op = d->op;
    if (op->type == PROG_COMPUTE)
        db->stream_rc = rec_event_row(db, d->rank, op, &db->stream_err);
    else if (op->type == PROG_SEND)
        db->stream_rc = rec_transfer_row(db, d->rank, op, &db->stream_err);
}

/* The engine's ledger as it changes: each rank's baseline first (sim/eng.h),
 * then its total after every change, in time order per rank. */
static void stream_mem(void *ctx, int32_t rank, double t, double bytes)
{
    rec_db *db = ctx;
    if (!db->stream_rc && db->streaming)
        db->stream_rc = rec_memory_row(db, rank, t, bytes, &db->stream_err);
}

int rec_stream_begin(rec_db *db, eng_sink *sink, ps_err *err)
{
    if (db->readonly)
        return ps_errf(err, "%s: opened read-only", db->path);
    /* a sweep worker's shipped runs come before this one (rec/ship.c) */
    if (db->ship && rec_ship_unload(db, err))
        return PS_ERR;
    rec_stream_cancel(db);
    /* rows to the writer threads when they can start, else bound here (and
     * always with PIPESIM_REC_THREAD=0, the test mode that compares both);
     * the transfer rows through a second writer's twin when pipesim_aux
     * can be attached now, before the run's transaction, which is then
     * the only one (a sweep's batch would keep the twin's image locked
     * across its runs) */
    const char *thread = getenv("PIPESIM_REC_THREAD");
    int threads = !(thread && strcmp(thread, "0") == 0);
    if (rec_reopen(db, err)) /* a published file's connection, as
                                rec_run_begin would open it */
        return PS_ERR;
    int aux = threads && !db->batch_mode && sqlite3_get_autocommit(db->db) &&
              rec_aux_worth() && rec_aux_attach(db) == PS_OK;
    /* the run's transaction, as rec_write's: the lock before the first row */
    if (rec_run_begin(db, err))
        return PS_ERR;
    if (rec_timeline_start(db, err)) {
        rec_run_rollback(db);
        return PS_ERR;
    }
    db->streaming = 1;
    db->stream_rc = PS_OK;
    db->writing = threads && rec_writer_start(db, aux) == PS_OK;
    *sink =
        (eng_sink){.op_done = stream_op, .mem_change = stream_mem, .ctx = db};
    return PS_OK;
}
