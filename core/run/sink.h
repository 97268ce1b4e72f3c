/* The run layer's side of a front end's sink (rec/row.h): pipe_run and
 * coll_exec hand their run to a rec_sink, and this one records it into a
 * database with the recorder's calls, so that no front end holds a rec_db.
 * The durability contract is rec_write's (rec/rec.h). */
#ifndef PS_RUN_SINK_H
#define PS_RUN_SINK_H

#include "rec/rec.h"
#include "rec/row.h"

/* Fills *s to record into db (rec_stream_begin, rec_stream_cancel,
 * rec_write) and returns s; returns NULL when db is NULL (nothing
 * recorded), which a front end takes as no sink. */
const rec_sink *run_sink_db(rec_sink *s, rec_db *db);

#endif
