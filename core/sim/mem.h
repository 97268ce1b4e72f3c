/* Memory ledger: each rank's memory over time, derived from the executed
 * programs. A COMPUTE op with mem > 0 allocates when it starts and one with
 * mem < 0 frees when it ends (activations exist while the forward runs and
 * until the backward has finished with them). Compute ops of one rank never
 * overlap, so walking them in start order gives the rank's timeline. */
#ifndef PS_MEM_H
#define PS_MEM_H

#include "base/err.h"
#include "sim/prog.h"

typedef struct mem_rank {
    double static_bytes; /* weights + gradients + optimizer state */
    double peak;         /* highest total */
    double t_peak;       /* first time the peak was reached */
    double final;        /* total after the last op */
} mem_rank;

/* Called once per change, in time order per rank: total bytes after it. */
typedef void (*mem_visit)(void *ctx, int32_t rank, double t, double bytes);

/* Computes peaks for every rank of an executed program set. static_bytes has
 * ps->nranks entries; out receives ps->nranks entries. If visit is non-NULL
 * it also receives every change (the baseline first, at t = 0). Fails only
 * when out of memory. */
int mem_ledger(const prog_set *ps, const double *static_bytes, mem_rank *out,
               mem_visit visit, void *ctx, ps_err *err);

#endif
