/* Reports over a recorded database, for `pipesim report`: a table comparing
 * all runs, and one run's summary with an ASCII Gantt chart. Reads only
 * through rec/rec.h's query API, so it works on any pipesim database, including
 * one opened read-only. */
#ifndef PS_REPORT_H
#define PS_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "out/view.h"
#include "rec/rec.h"

/* Writes s as one CSV field (RFC 4180): as it is, or in double quotes with
 * each quote doubled when it holds a comma, a quote, CR or LF; each byte
 * that is not well-formed UTF-8 as U+FFFD (base/utf8.h). The one CSV
 * quoting of the readers (report tables, plot data). */
void report_csv_field(FILE *out, const char *s);

/* Writes one line per run (id, name, kind, schedule, p, m, v, dp, makespan,
 * bubble, closed-form bubble, peak memory, fits, imbalance, status, and the
 * step's model TFLOP/s per GPU, MFU and tokens/s per GPU) to out: an
 * aligned table in human units, or with csv != 0 CSV with a header line and
 * raw numbers in base units (seconds, fractions, bytes) for other tools.
 * Fails only when a query fails. */
int report_runs(rec_db *db, FILE *out, int csv, ps_err *err);

/* Writes one line per run (run > 0: that run only) whose peak memory
 * exceeds a device's capacity, "pipesim: warning: run 3: rank 2 needs 402.1
 * GiB, device has 80 GiB", naming the rank furthest over (and how many
 * more are); after max_runs lines (0: no limit) one line counts the rest.
 * Writes nothing when everything fits or capacities are unknown. Fails only
 * when a query fails. */
int report_warnings(rec_db *db, int64_t run, FILE *out, int max_runs,
                    ps_err *err);
/* The max_runs `pipesim report` and ps.show use for the run table. */
#define REPORT_WARN_RUNS 10

/* Columns of a report when the caller gives no width (`pipesim report`
 * without --width, ps.show(r)): the usual wide terminal. */
#define REPORT_WIDTH 100

/* The widths `pipesim report --width` and ps.show take: report_run's least
 * timeline, and a bound that keeps a typo from building a huge report
 * (every rank's row is that wide). */
#define REPORT_MIN_WIDTH 20
#define REPORT_MAX_WIDTH 10000

/* The one message for a width outside REPORT_MIN_WIDTH..REPORT_MAX_WIDTH
 * or not an integer, "width must be an integer in 20..10000, got 80.5";
 * shown is the value as the caller writes it. Returns PS_ERR. */
int report_width_error(const char *shown, ps_err *err);

/* Reads the text of `--width N` into *width (0); else PS_ERR with
 * report_width_error's message, the text shown quoted unless it is a
 * number. */
int report_parse_width(const char *text, int *width, ps_err *err);

/* Writes run's summary line and, when its events were recorded, a Gantt
 * chart: one row per rank, `width` columns wide in total (the timeline
 * gets what the rank label and bubble column leave, at least 20), a time
 * axis and a legend. A run recorded at summary level gets the summary and
 * a note instead of the chart. Fails with "run 7 not found in DB" for an
 * unknown id, or when a query fails. */
int report_run(rec_db *db, int64_t run, FILE *out, int width, ps_err *err);

/* report_run with the timeline's view (out/view.h; NULL: the default):
 * the chart draws one row per simulated rank (labelled with the cluster
 * ranks it stands for under TP, as `pipesim export` names them), of one
 * replica when a run with several would need more than
 * REPORT_AUTO_ROWS rows, saying so and how to get everything; --ranks,
 * --stages and --window choose what is drawn, the window's span being
 * the time axis. */
int report_run_view(rec_db *db, int64_t run, const out_view *view, FILE *out,
                    int width, ps_err *err);

/* Rows (ranks x chunks) above which the chart of a run with several
 * data-parallel replicas draws replica 0 alone by default. */
#define REPORT_AUTO_ROWS 16

/* Writes the efficiency line of a pipeline run (model FLOPs per step,
 * model and hardware TFLOP/s per GPU, MFU of the dense peak, tokens/s per
 * GPU, and the run's note on what is missing), wrapped to width; nothing
 * for a collective or a run recorded before schema 8. Fails only when a
 * query fails (out/report_eff.c). */
int report_efficiency(rec_db *db, int64_t run, FILE *out, int width,
                      ps_err *err);

/* Writes run as CSV for other tools: a header line, then one line per rank
 * with its rank_stat columns (run, rank, busy, bubble, static_memory,
 * peak_memory, t_peak, exposed_comm, capacity, fits) in base units, empty
 * for NULL. Fails with "run 7 not found in DB", or when a query fails. */
int report_run_csv(rec_db *db, int64_t run, FILE *out, ps_err *err);

#endif
