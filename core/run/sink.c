/* A front end's sink into a database (run/sink.h): each callback is the
 * recorder's call of the same job, the handle being the sink's context. */
#include "run/sink.h"

#include <stddef.h>

static int db_stream_begin(void *ctx, struct eng_sink *hook, ps_err *err)
{
    return rec_stream_begin(ctx, hook, err);
}

static void db_stream_cancel(void *ctx)
{
    rec_stream_cancel(ctx);
}

static int db_write(void *ctx, const rec_payload *p, enum rec_level level,
                    int64_t *id, ps_err *err)
{
    return rec_write(ctx, p, level, id, err);
}

const rec_sink *run_sink_db(rec_sink *s, rec_db *db)
{
    if (!db)
        return NULL;
    *s = (rec_sink){.ctx = db,
                    .stream_begin = db_stream_begin,
                    .stream_cancel = db_stream_cancel,
                    .write = db_write};
    return s;
}

int run_step(pipe_ctx *ctx, const pipe_config *cfg, net *nw, rec_db *db,
             pipe_result *res, ps_err *err)
{
    rec_sink sink;
    int rc = pipe_run(ctx, cfg, nw, run_sink_db(&sink, db), res, err);
    if (db)
        rec_set_batch(db, 0); /* the next writer commits the batch first */
    return rc;
}

int run_flush(rec_db *db, ps_err *err)
{
    return rec_flush(db, err);
}
