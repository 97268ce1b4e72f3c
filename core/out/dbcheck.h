/* Checking a recorded run before report or export draws it: the database
 * may have been edited by hand or damaged, and the readers index arrays by
 * rank and scale loops by times. Reads only through rec/rec.h's query API. */
#ifndef PS_DBCHECK_H
#define PS_DBCHECK_H

#include <stdint.h>

#include "base/err.h"
#include "rec/rec.h"

/* The most ranks any run has (the binding's limit on a cluster). */
#define DBCHECK_MAX_RANKS (1 << 20)

/* Checks the rows of run id that report and export read: the run's
 * makespan is NULL or a finite time >= 0; every event, transfer, memory and
 * rank_stat row has its ranks in 0..N-1 (N: the cluster's ranks from the
 * run's params, else stages x dp for a run without a cluster, else
 * DBCHECK_MAX_RANKS), finite times >= 0 with t_end >= t_start, finite
 * figures, and microbatch, stage, chunk and tag NULL or 32-bit integers.
 * Sets *nranks to N when nranks is not NULL. Returns 0 (also when the run
 * does not exist: the caller says so), or PS_ERR naming the first bad row's
 * field and value: "DB: run 3: event row has rank -5 outside 0..7". */
int dbcheck_run(rec_db *db, int64_t id, int32_t *nranks, ps_err *err);

#endif
