/* `pipesim plot`: a line chart (SVG) or its table (CSV) of one recorded
 * quantity against another, one line per group, read from a database
 * through rec/rec.h. out/plot.c parses the command and queries the runs;
 * out/plot_svg.c draws axes in units, ticks, lines and the legend. */
#ifndef PS_PLOT_H
#define PS_PLOT_H

#include <stdio.h>

#include "base/err.h"
#include "out/view.h"

/* What an axis measures, for its tick labels: seconds are shown in s, ms,
 * us or ns, bytes in B, KiB, MiB or GiB, bandwidths in GB/s (decimal, as
 * nccl-tests prints them), fractions as percentages. */
enum plot_unit {
    PLOT_UNIT_NONE,
    PLOT_UNIT_SECONDS,
    PLOT_UNIT_BYTES,
    PLOT_UNIT_BANDWIDTH,
    PLOT_UNIT_FRACTION
};

/* One group's line: n points in increasing x. dashed (NULL when the chart
 * has no dashed series) holds the companion series drawn dashed in the
 * same colour, NAN where a point has none. */
typedef struct plot_series {
    char *label;
    int n;
    double *x, *y, *dashed;
    size_t cap; /* of x, y and dashed, as out/plot.c grows them */
} plot_series;

typedef struct plot_chart {
    const char *title;
    const char *xlabel, *ylabel; /* axis titles, without the unit */
    const char *legend_title;    /* NULL: no legend title */
    const char *dashed_label;    /* legend entry of the dashed lines */
    enum plot_unit xunit, yunit;
    int logx, logy; /* every value > 0 on a log axis */
    const plot_series *series;
    int nseries;
    /* a categorical x axis: position i (a series' x) is labelled
     * xcats[i]; NULL for a numeric axis */
    const char *const *xcats;
    int nxcats;
} plot_chart;

/* The unit a recorded column is in, from its name ("makespan" seconds,
 * "peak_memory" bytes, "bubble" a fraction, ...); PLOT_UNIT_NONE for a
 * name it does not know. */
enum plot_unit plot_unit_of(const char *column);

/* Parses "s", "bytes", "B/s", "fraction" or "none"; -1 for anything else. */
int plot_unit_parse(const char *s);

/* Nice tick positions covering [lo, hi] (steps of 1, 2 or 5 times a power
 * of ten, about 6 of them; on a log axis powers of ten, or of two when
 * pow2 is set, or 1-2-5 multiples over few decades). Writes at most max
 * ticks, returns how many; *axis_lo and *axis_hi get the axis range
 * (widened to whole steps on a linear axis). lo <= hi, both > 0 when log. */
int plot_ticks(double lo, double hi, int log, int pow2, double *ticks, int max,
               double *axis_lo, double *axis_hi);

/* Writes the chart as SVG 1.1 (one <polyline> per series with a marker per
 * point, class "series" and data-label; dashed lines with
 * stroke-dasharray; a <title> tooltip per point). Fails only when writing
 * fails. */
int plot_svg(const plot_chart *c, FILE *out, ps_err *err);

/* `pipesim plot DB --x X --y Y [--by G] [--where SQL] ...`, argv[0] is DB
 * (the dispatcher passes argc - 2, argv + 2). The output file is written
 * only on success. Returns 0, or 1 after printing one line
 * "pipesim: plot: ..." to stderr. */
int plot_main(int argc, char **argv);

/* The view options of `pipesim plot` (out/plot_view.c): reads option
 * argv[*i] when it is one of out/view.h's (advancing *i past its value)
 * into v, keeping the first flag's name in *flag: 1, or 0 when it is
 * another option, or -1 after printing the error. */
int plot_view_arg(out_view *v, const char **flag, int argc, char **argv,
                  int *i);

/* The FROM clause of plot's query (allocated): run, joined with the
 * rank_stat rows when join, those of v's --ranks (a row standing for one
 * of them) and --replica only. NULL with err set when v asks for what plot
 * cannot do: --stages and --window (a timeline's), or a filter of ranks
 * when no term reads rank_stat (flag: the first view option given). */
char *plot_view_from(const out_view *v, const char *flag, int join,
                     ps_err *err);

/* Writes data to path (stdout when NULL); removes a half-written file.
 * 0, or 1 after printing "pipesim: plot: writing ...". */
int plot_write_out(const char *path, const char *data, size_t size);

#endif
