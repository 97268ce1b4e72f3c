/* Export of recorded runs for looking at them: Chrome Trace Event JSON (for
 * Perfetto and chrome://tracing) and an SVG Gantt chart with memory curves.
 * Both read the database only through rec/rec.h's read API and write to a
 * caller-owned FILE; on failure part of the output may have been written
 * (export_main buffers, so the CLI never leaves a partial file). */
#ifndef PS_EXPORT_H
#define PS_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "out/view.h"
#include "rec/rec.h"

/* Which ranks an export draws (`pipesim export --replica`): every rank;
 * or, the default, replica 0's alone when the run simulates more than
 * EXPORT_AUTO_RANKS ranks over several data-parallel replicas, saying so
 * (chrome: otherData.view; svg: under the run's title); or replica k >= 0.
 * Ranks, not replicas, make a timeline large: GPT-3 175B on 1,024 GPUs
 * simulates 128 ranks, 8 per replica. */
enum { EXPORT_REPLICA_ALL = -1, EXPORT_REPLICA_AUTO = -2 };
#define EXPORT_AUTO_RANKS 64

/* Writes run as a Chrome trace in the JSON Object Format:
 *   - one process per node (pid = node when the run's params give
 *     gpus_per_node, else pid = rank), named by "M" metadata events;
 *   - per simulated rank (out/export_run.h: not the ranks of its TP group
 *     it stands for) a compute track (tid 100·rank) and a communication
 *     track (tid 100·rank + 50), named by the rank ("rank 1 compute") or
 *     by the cluster ranks it stands for ("ranks 0-7 compute"); slices
 *     that overlap on one track are moved to extra tracks ("rank 1 comm
 *     2"), so every track is non-overlapping;
 *   - an "X" slice per event row ("F3", "B3.c1", "OPT") and, per transfer
 *     row, one slice on each end ("send act 3 -> rank 2" on the source,
 *     "recv act 3 <- rank 1" on the destination; collective transfers are
 *     named by the run's collective op, "allreduce step 2"), each track's
 *     slices in time order, with args rank, stage, chunk, microbatch, bytes;
 *   - a flow ("s" on the send slice, "f" with "bp":"e" on the receive slice,
 *     both at the slice start, id = transfer number) per transfer;
 *   - a "memory" counter per rank ("C", args {"bytes": N});
 *   - otherData: the run row and its params JSON (embedded as an object
 *     when valid JSON, else as a string).
 * Times are microseconds. view (out/view.h, NULL: the default) chooses
 * the ranks, stages and window drawn (export_run.h). Fails naming the run when
 * it does not exist
 * ("run 7 not found in PATH"), failed, or was recorded without a timeline
 * ("run 3 has no timeline (recorded with record = \"summary\")"). */
int export_chrome(rec_db *db, int64_t run, const out_view *view, FILE *out,
                  ps_err *err);

/* Writes an SVG Gantt chart of nruns runs stacked on one time scale (the
 * largest makespan): per run a title, one row per simulated rank
 * (labelled as export_chrome names its tracks) with a rect per
 * compute event (class "op F" etc., attributes data-run and data-rank, a
 * <title> tooltip), a thin transfer lane, idle background, the rank's
 * bubble at the right, a time axis, and the ranks' memory over time with
 * the device capacity dashed when the params give it. With --window the
 * time scale is the window's. Fails as export_chrome does, for the first
 * bad run. */
int export_svg(rec_db *db, const int64_t *runs, int nruns, const out_view *view,
               FILE *out, ps_err *err);

/* Writes a pipeline run's per-rank compute orders as PyTorch's schedule
 * CSV (core/out/export_pytorch.c): one row per pipeline rank, cells such as
 * "0F0", "4I1", "4W1", "2B0" (global stage, F / I / W / B, microbatch);
 * recomputes and gradient-sync pieces are not actions of their own. With
 * data parallelism, replica 0's ranks. Fails as export_chrome does, or for
 * a run that is not a pipeline. */
int export_pytorch_csv(rec_db *db, int64_t run, FILE *out, ps_err *err);

/* `pipesim export DB RUN --format chrome|svg|pytorch-csv [-o FILE]` and
 * `pipesim export DB --compare RUN1,RUN2,... [--format svg] [-o FILE]`;
 * argv[0] is DB (the dispatcher passes argc - 2, argv + 2). Writes to
 * stdout without -o; the output file is written only on success. Returns
 * 0, or 1 after printing one line "pipesim: ..." to stderr. */
int export_main(int argc, char **argv);

#endif
