/* Internal to step/: what step/pipe.c calls in the files beside it (live
 * mode, the layout sizes) and the headers of the parts it drives (costs,
 * report, its context). Not a public interface (step/pipe.h is). */
#ifndef PS_PIPE_IMPL_H
#define PS_PIPE_IMPL_H

#include <stdint.h>

#include "base/err.h"
#include "par/ep.h"
#include "par/fold.h"
#include "par/pass.h"
#include "par/sim.h"
#include "rec/row.h"
#include "sched/sched.h"
#include "sim/mem.h"
#include "step/pipe.h"
#include "step/pipe_cost.h"
#include "step/pipe_ctx.h"
#include "step/pipe_report.h"

/* Runs the lowered, sealed programs ps of cfg (spec as lowered; stage s
 * holds layers first[s] .. first[s] + count[s] - 1; log the gradient
 * sync's collectives, each bucket of each rank; rank_of the cluster rank
 * of pipeline rank r of replica j at j * p + r) for real
 * (step/pipe_live.c): fills cfg->live, writes the median iteration's
 * measured times into ps and its makespan into *makespan. */
int pipe_live_run(const pipe_config *cfg, const sched_spec *spec, prog_set *ps,
                  const int32_t *first, const int32_t *count,
                  const par_log *log, const int32_t *rank_of, double *makespan,
                  ps_err *err);

/* The layout sizes of cfg (step/pipe_config.c). */
void pipe_sizes_of(const pipe_config *cfg, par_sizes *sz);

#endif
