/* What a simulated step reports (step/pipe_report.c): uniformity for the
 * closed form, each rank's statistics, the recorded rows. Reads the run's
 * context (struct pipe_ctx, step/pipe_ctx.h) that step/pipe.c fills. */
#ifndef PS_PIPE_REPORT_H
#define PS_PIPE_REPORT_H

#include "net/net.h"
#include "par/pass.h"
#include "rec/row.h"
#include "step/pipe_ctx.h"
#include "step/pipe_types.h"

/* step/pipe_report.c: is the run uniform (every stage the same times,
 * every boundary free), so the bubble's closed form applies? */
int pipe_is_uniform(const pipe_ctx *ctx, const pipe_config *cfg,
                    const par_step *st, const net *nw);

/* step/pipe_report.c: each rank's statistics into res, from the engine's. */
void pipe_fill_stats(pipe_ctx *ctx, const pipe_config *cfg, const par_step *st,
                     pipe_result *res);

/* step/pipe_report.c: hands the run's rows to sink; error != NULL as
 * failed (summary level, no rank rows; stage rows only when with_stages). */
int pipe_record(pipe_ctx *ctx, const pipe_config *cfg, const net *nw,
                const rec_sink *sink, pipe_result *res, const char *error,
                int with_stages, ps_err *err);

#endif
