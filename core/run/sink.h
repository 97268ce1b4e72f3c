/* The run layer's side of a front end's sink (rec/row.h): pipe_run and
 * coll_exec hand their run to a rec_sink, and this one records it into a
 * database with the recorder's calls, so that no front end holds a rec_db
 * and the binding calls no recorder function for a step.
 * The durability contract is rec_write's (rec/rec.h). */
#ifndef PS_RUN_SINK_H
#define PS_RUN_SINK_H

#include "rec/rec.h"
#include "rec/row.h"
#include "step/pipe.h"

/* Fills *s to record into db (rec_stream_begin, rec_stream_cancel,
 * rec_write) and returns s; returns NULL when db is NULL (nothing
 * recorded), which a front end takes as no sink. */
const rec_sink *run_sink_db(rec_sink *s, rec_db *db);

/* One training step recorded into db (NULL: nothing recorded): pipe_run
 * through run_sink_db, then the sweep's batch mode (rec_set_batch) off, so
 * that the next writer commits the batch first. pipe_run's result. */
int run_step(pipe_ctx *ctx, const pipe_config *cfg, net *nw, rec_db *db,
             pipe_result *res, ps_err *err);

/* db's runs written so far made readable (rec_flush), before a report
 * reads them back. */
int run_flush(rec_db *db, ps_err *err);

#endif
