/* Internal to pipesim merge (out/merge.c, out/merge_check.c). */
#ifndef PS_MERGE_IMPL_H
#define PS_MERGE_IMPL_H

#include "base/err.h"

/* The inputs as shards of one `pipesim run --shard K/N` (their shard
 * tables, rec/shard.c): the same scenario version, sweeps and N, each K
 * once, none missing, none still being written or left incomplete, every
 * input made by --shard. With partial, a missing shard, an incomplete or
 * live one and an input without shard rows are named in *note (malloc'd,
 * "; "-separated; NULL when none) instead of refused. */
int merge_check_shards(const char *const *in, int n, int partial, char **note,
                       ps_err *err);

#endif
