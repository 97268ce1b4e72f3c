/* pipesim merge (out/merge.c): shard databases into one, in the unsharded run
 * order. */
#ifndef PS_MERGE_H
#define PS_MERGE_H

#include <stdint.h>

#include "base/err.h"

/* Writes a new database at out holding every run of the n databases in
 * (pipesim run --shard K/N outputs, in any order), renumbered in point
 * order: each sweep where shard 0 ran it, its points by point_index; the
 * runs outside sweeps where shard 0 has them. Fails, leaving no out, when
 * out exists, an input is unreadable or of another schema version, the
 * inputs come from different scenario versions (run.scenario) or share no
 * sweep, or a sweep's point is in two inputs. Atomic: out appears complete
 * or not at all. *runs = the runs written. */
int merge_dbs(const char *out, const char *const *in, int n, int64_t *runs,
              ps_err *err);

#endif
