/* pipesim merge (out/merge.c): shard databases into one, in the unsharded run
 * order. */
#ifndef PS_MERGE_H
#define PS_MERGE_H

#include <stdint.h>

#include "base/err.h"

/* Writes a new database at out holding every run of the n databases in
 * (pipesim run --shard K/N outputs, in any order), renumbered in point
 * order: each sweep where shard 0 ran it, its points by point_index; the
 * runs outside sweeps where shard 0 has them. Any number of inputs, in
 * memory that does not grow with their runs: each is copied whole into a
 * scratch database beside out, one at a time, and the runs are taken
 * from there in order.
 * Fails, leaving no out, when out exists, an input is unreadable or of
 * another schema version, the inputs come from different scenario
 * versions (run.scenario), sweeps or N, a shard is given twice, a sweep's
 * point is in two inputs, or (unless partial) a shard is missing, an
 * input is still being written or was left incomplete, or was not made
 * by --shard (merge_check_shards). Atomic: out appears complete or not at
 * all. *runs = the runs written; *note (malloc'd, NULL when none) says
 * what a partial merge lacks. */
int merge_dbs(const char *out, const char *const *in, int n, int partial,
              int64_t *runs, char **note, ps_err *err);

#endif
