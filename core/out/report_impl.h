/* Internal to the text reports (out/report.c, out/report_runs.c,
 * out/report_eff.c): the formatting and query helpers they share. Not a
 * public header: nothing outside core/out/report*.c includes it. */
#ifndef PS_REPORT_IMPL_H
#define PS_REPORT_IMPL_H

#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "out/view.h"
#include "rec/rec.h"

/* The unit a time of s seconds reads best in: its scale (1, 1e-3, 1e-6 or
 * 1e-9) and its name in *name ("s", "ms", "us", "ns"). */
double report_time_unit(double s, const char **name);

/* s seconds as "1.234 ms" (4 significant digits, the unit it reads best
 * in), into buf; returns buf. */
const char *report_fmt_time(double s, char *buf, size_t size);

/* b bytes in binary units, "1.50 GiB"; returns buf. */
const char *report_fmt_bytes(double b, char *buf, size_t size);

/* A fraction as a percentage, "12.34%"; returns buf. */
const char *report_fmt_pct(double f, char *buf, size_t size);

/* Prepares sql with ?1 bound to run (when run >= 0); NULL with err set
 * when the statement does not prepare. The caller frees it. */
rec_query *report_query(rec_db *db, const char *sql, int64_t run, ps_err *err);

/* Writes text to out, breaking lines after ", " so that none is longer
 * than width where possible; continuation lines are indented. */
void report_wrap(FILE *out, const char *text, int width);

/* The Gantt chart of run (out/report_gantt.c): the rows view draws,
 * width columns in total, the time axis over [0, makespan] or the
 * window, and a legend. */
int report_gantt(rec_db *db, int64_t run, const out_view *view, int width,
                 double makespan, FILE *out, ps_err *err);

#endif
