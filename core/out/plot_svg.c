/* The drawing half of `pipesim plot`: units and nice ticks for each axis,
 * then plain SVG 1.1 (inline attributes, as out/export_svg.c writes, so it
 * renders the same in browsers, rsvg and editors): grid, axes with unit
 * labels, one polyline with markers per series, dashed companions, legend. */
#include "out/plot.h"

#include <math.h>
#include <string.h>

#include "out/svg.h"

/* Geometry in px: the plot area is PW x PH at (ML, MT); the legend sits
 * right of it, as wide as its longest label needs. */
enum { ML = 84, MT = 48, PW = 540, PH = 340, MB = 62, LEGEND_GAP = 24 };
#define MAX_TICKS 64
#define CHAR_W 7.0 /* mean glyph advance of 12 px sans-serif */

/* Okabe and Ito's colour-blind-safe palette (its yellow, unreadable on
 * white, left out), then two neutral hues; groups beyond cycle. */
static const char *const colors[] = {
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
    "#56B4E9", "#000000", "#8C564B", "#7F7F7F",
};
#define NCOLORS ((int)(sizeof colors / sizeof colors[0]))
static const char ink[] = "#1f2933";
static const char ink2[] = "#52606d";
static const char grid[] = "#e4e7eb";

typedef struct unit_row {
    const char *name;
    enum plot_unit unit;
} unit_row;

/* Columns of the run, rank_stat, stage and collective tables (rec/rec.h) and
 * the sweep's usual coordinates, by what they measure. */
static const unit_row unit_rows[] = {
    {"makespan", PLOT_UNIT_SECONDS},
    {"busy", PLOT_UNIT_SECONDS},
    {"t_peak", PLOT_UNIT_SECONDS},
    {"exposed_comm", PLOT_UNIT_SECONDS},
    {"tp_comm", PLOT_UNIT_SECONDS},
    {"tp_exposed", PLOT_UNIT_SECONDS},
    {"fwd_time", PLOT_UNIT_SECONDS},
    {"bwd_time", PLOT_UNIT_SECONDS},
    {"time", PLOT_UNIT_SECONDS},
    {"step_time", PLOT_UNIT_SECONDS},
    {"peak_memory", PLOT_UNIT_BYTES},
    {"static_memory", PLOT_UNIT_BYTES},
    {"capacity", PLOT_UNIT_BYTES},
    {"bytes", PLOT_UNIT_BYTES},
    {"act_bytes", PLOT_UNIT_BYTES},
    {"out_bytes", PLOT_UNIT_BYTES},
    {"size", PLOT_UNIT_BYTES},
    {"algbw", PLOT_UNIT_BANDWIDTH},
    {"busbw", PLOT_UNIT_BANDWIDTH},
    {"bubble", PLOT_UNIT_FRACTION},
    {"closed_form_bubble", PLOT_UNIT_FRACTION},
    {"fraction", PLOT_UNIT_FRACTION},
};

enum plot_unit plot_unit_of(const char *column)
{
    for (size_t i = 0; i < sizeof unit_rows / sizeof unit_rows[0]; i++)
        if (strcmp(unit_rows[i].name, column) == 0)
            return unit_rows[i].unit;
    return PLOT_UNIT_NONE;
}

int plot_unit_parse(const char *s)
{
    static const char *const names[] = {"none", "s", "bytes", "B/s",
                                        "fraction"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0)
            return i; /* the enum's order */
    return -1;
}

/* The display scale of a linear axis whose largest magnitude is m: values
 * are multiplied by *factor and shown with suffix. */
static void unit_scale(enum plot_unit u, double m, double *factor,
                       const char **suffix)
{
    *factor = 1;
    *suffix = "";
    switch (u) {
    case PLOT_UNIT_NONE: break;
    case PLOT_UNIT_SECONDS:
        if (m >= 1 || m == 0)
            *suffix = "s";
        else if (m >= 1e-3)
            *factor = 1e3, *suffix = "ms";
        else if (m >= 1e-6)
            *factor = 1e6, *suffix = "\xc2\xb5s";
        else
            *factor = 1e9, *suffix = "ns";
        break;
    case PLOT_UNIT_BYTES: {
        static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        int k = 0;
        while (k < 4 && m >= ldexp(1, 10 * (k + 1)))
            k++;
        *factor = ldexp(1, -10 * k);
        *suffix = names[k];
        break;
    }
    case PLOT_UNIT_BANDWIDTH:
        if (m >= 1e9 || m == 0)
            *factor = 1e-9, *suffix = "GB/s";
        else
            *factor = 1e-6, *suffix = "MB/s";
        break;
    case PLOT_UNIT_FRACTION: *factor = 100, *suffix = "%"; break;
    }
}

static double nice_step(double raw)
{
    double mag = pow(10, floor(log10(raw)));
    double norm = raw / mag;
    return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

/* Tolerances of the tick arithmetic, relative: a tick computed as 2 x 10^k
 * or a bound read from a database differs from the decimal it stands for
 * in its last bits, and must still count as on the axis (TICK_TOL, for
 * products of powers) or as a whole number of steps (STEP_TOL, for
 * quotients by the step). */
#define TICK_TOL 1e-12
#define STEP_TOL 1e-9

int plot_ticks(double lo, double hi, int log, int pow2, double *ticks, int max,
               double *axis_lo, double *axis_hi)
{
    int n = 0;
    if (log && pow2) {
        int k0 = (int)floor(log2(lo)), k1 = (int)ceil(log2(hi));
        if (k1 == k0)
            k1++;
        int every = (k1 - k0 + 7) / 8; /* at most about 9 labels */
        for (int k = k0; k <= k1 && n < max; k += every)
            ticks[n++] = ldexp(1, k);
        *axis_lo = ldexp(1, k0);
        *axis_hi = ldexp(1, k1);
        return n;
    }
    if (log) {
        int d0 = (int)floor(log10(lo)), d1 = (int)ceil(log10(hi));
        if (d1 == d0)
            d1++;
        if (d1 - d0 > 2) {
            int every = (d1 - d0 + 7) / 8;
            for (int d = d0; d <= d1 && n < max; d += every)
                ticks[n++] = pow(10, d);
            *axis_lo = pow(10, d0);
            *axis_hi = pow(10, d1);
            return n;
        }
        /* a decade or two: 1-2-5 steps, the axis tight around them */
        static const double m125[] = {1, 2, 5};
        *axis_lo = pow(10, d0);
        *axis_hi = pow(10, d1);
        for (int d = d0; d <= d1; d++)
            for (int j = 0; j < 3; j++) {
                double t = m125[j] * pow(10, d);
                if (t <= lo * (1 + TICK_TOL))
                    *axis_lo = t;
                if (t >= hi * (1 - TICK_TOL) && t < *axis_hi)
                    *axis_hi = t;
            }
        for (int d = d0; d <= d1; d++)
            for (int j = 0; j < 3 && n < max; j++) {
                double t = m125[j] * pow(10, d);
                if (t >= *axis_lo * (1 - TICK_TOL) &&
                    t <= *axis_hi * (1 + TICK_TOL))
                    ticks[n++] = t;
            }
        return n;
    }
    if (!(hi > lo)) {
        double d = lo == 0 ? 1 : fabs(lo) * 0.1;
        lo -= d;
        hi += d;
    }
    double step = nice_step((hi - lo) / 6);
    double a = floor(lo / step + STEP_TOL) * step;
    double b = ceil(hi / step - STEP_TOL) * step;
    for (int i = 0; n < max; i++) {
        double t = a + i * step;
        if (t > b + step * STEP_TOL)
            break;
        ticks[n++] = fabs(t) < step * STEP_TOL ? 0 : t;
    }
    *axis_lo = a;
    *axis_hi = b;
    return n;
}

/* One value with its own unit ("512 KiB", "4 ms", "27.3%"), for log-axis
 * ticks and tooltips. */
static void format_value(char *buf, size_t size, double v, enum plot_unit u)
{
    double f;
    const char *suffix;
    unit_scale(u, fabs(v), &f, &suffix);
    if (u == PLOT_UNIT_FRACTION)
        snprintf(buf, size, "%.4g%%", v * f);
    else
        snprintf(buf, size, "%.4g%s%s", v * f, *suffix ? " " : "", suffix);
}

/* An axis: data values map to [0, 1] through (t(v) - lo) / (hi - lo),
 * t = log10 on a log axis, else the display scale. */
typedef struct axis {
    int log;
    enum plot_unit unit;
    double factor; /* display scale (linear) */
    const char *suffix;
    double lo, hi; /* in t space */
    double ticks[MAX_TICKS];
    int nticks;
    int decimals; /* of linear tick labels */
} axis;

static double axis_t(const axis *a, double v)
{
    return a->log ? log10(v) : v * a->factor;
}

static double axis_pos(const axis *a, double v)
{
    return (axis_t(a, v) - a->lo) / (a->hi - a->lo);
}

/* Sets up an axis over the data range [lo, hi]; pow2: every value is a
 * power of two (microbatch counts, message sizes). */
static void axis_init(axis *a, double lo, double hi, int log, int pow2,
                      enum plot_unit unit)
{
    memset(a, 0, sizeof *a);
    a->log = log;
    a->unit = unit;
    a->factor = 1;
    a->suffix = "";
    double alo, ahi;
    if (log) {
        a->nticks =
            plot_ticks(lo, hi, 1, pow2, a->ticks, MAX_TICKS, &alo, &ahi);
        a->lo = log10(alo);
        a->hi = log10(ahi);
        return;
    }
    unit_scale(unit, fmax(fabs(lo), fabs(hi)), &a->factor, &a->suffix);
    a->nticks = plot_ticks(lo * a->factor, hi * a->factor, 0, 0, a->ticks,
                           MAX_TICKS, &alo, &ahi);
    double step = a->nticks > 1 ? a->ticks[1] - a->ticks[0] : 1;
    a->decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - STEP_TOL);
    if (a->decimals > 9)
        a->decimals = 9;
    for (int i = 0; i < a->nticks; i++)
        a->ticks[i] /= a->factor; /* back to data values */
    a->lo = alo;
    a->hi = ahi;
}

/* A categorical axis: positions 0..n-1, half a step of margin. */
static void axis_cats(axis *a, int n)
{
    memset(a, 0, sizeof *a);
    a->factor = 1;
    a->suffix = "";
    a->lo = -0.5;
    a->hi = n - 0.5;
}

static void tick_label(const axis *a, double v, char *buf, size_t size)
{
    if (a->log)
        format_value(buf, size, v, a->unit);
    else
        snprintf(buf, size, "%.*f", a->decimals, v * a->factor);
}

static void axis_title(FILE *out, const axis *a, const char *label)
{
    svg_text(out, label);
    if (!a->log && *a->suffix) {
        fputs(" (", out);
        svg_text(out, a->suffix);
        fputc(')', out);
    } else if (a->log)
        fputs(" (log scale)", out);
}

static int all_pow2(const plot_chart *c)
{
    for (int s = 0; s < c->nseries; s++)
        for (int i = 0; i < c->series[s].n; i++) {
            double x = c->series[s].x[i];
            int e;
            if (!(x > 0) || frexp(x, &e) != 0.5)
                return 0;
        }
    return 1;
}

/* The data ranges of both axes (y over both the lines and the dashed
 * companions). A linear y axis of non-negative values starts at 0. */
static void ranges(const plot_chart *c, double *xlo, double *xhi, double *ylo,
                   double *yhi)
{
    *xlo = *ylo = INFINITY;
    *xhi = *yhi = -INFINITY;
    for (int s = 0; s < c->nseries; s++) {
        const plot_series *p = &c->series[s];
        for (int i = 0; i < p->n; i++) {
            *xlo = fmin(*xlo, p->x[i]);
            *xhi = fmax(*xhi, p->x[i]);
            *ylo = fmin(*ylo, p->y[i]);
            *yhi = fmax(*yhi, p->y[i]);
            if (p->dashed && !isnan(p->dashed[i])) {
                *ylo = fmin(*ylo, p->dashed[i]);
                *yhi = fmax(*yhi, p->dashed[i]);
            }
        }
    }
    if (!isfinite(*xlo))
        *xlo = *xhi = *ylo = *yhi = c->logx || c->logy ? 1 : 0;
    if (!c->logy && *ylo >= 0)
        *ylo = 0;
}

/* The open tag of marker k (by series: circle, square, diamond,
 * triangle) of radius r at (x, y); returns its name, the caller closes it.
 * Earlier series get larger markers, so that lines drawn over each other
 * (GPipe's bubble is 1F1B's) stay told apart by the rings around the later
 * markers. */
static const char *marker(FILE *out, int k, double r, double x, double y,
                          const char *color)
{
    const char *tag = "polygon";
    switch (k % 4) {
    case 0:
        fprintf(out, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\"", x, y, r);
        tag = "circle";
        break;
    case 1:
        r *= 0.85; /* a square of the same area looks as large */
        fprintf(out,
                "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"",
                x - r, y - r, 2 * r, 2 * r);
        tag = "rect";
        break;
    case 2:
        r *= 1.2;
        fprintf(out,
                "<polygon points=\"%.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f\"",
                x, y - r, x + r, y, x, y + r, x - r, y);
        break;
    default:
        r *= 1.2;
        fprintf(out, "<polygon points=\"%.2f,%.2f %.2f,%.2f %.2f,%.2f\"", x,
                y - r, x + r, y + 0.8 * r, x - r, y + 0.8 * r);
    }
    fprintf(out, " fill=\"%s\" stroke=\"#ffffff\" stroke-width=\"0.8\"", color);
    return tag;
}

/* Marker radius of series s of n: 3.5 px for the last, 1.5 px more for
 * each one before it, up to 3 steps. */
static double marker_r(int s, int n)
{
    int steps = n - 1 - s;
    return 3.5 + 1.5 * (steps > 3 ? 3 : steps);
}

/* A polyline over the points i in [from, to) of one series. */
static void polyline(FILE *out, const axis *ax, const axis *ay,
                     const plot_series *p, const double *y, int from, int to,
                     const char *color, int dashed, int faint)
{
    fprintf(out,
            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s "
            "points=\"",
            color,
            dashed  ? "1.8"
            : faint ? "5"
                    : "2.2",
            dashed  ? " stroke-dasharray=\"7 4\""
            : faint ? " stroke-opacity=\"0.3\""
                    : "");
    for (int i = from; i < to; i++)
        fprintf(out, "%s%.2f,%.2f", i > from ? " " : "",
                ML + PW * axis_pos(ax, p->x[i]),
                MT + PH * (1 - axis_pos(ay, y[i])));
    fputs("\"/>\n", out);
}

/* The legend's width: its longest label, capped at 48 characters so that
 * a long run name cannot push the plot off the page. */
static int legend_width(const plot_chart *c)
{
    size_t longest = c->legend_title ? strlen(c->legend_title) : 0;
    for (int s = 0; s < c->nseries; s++)
        longest = strlen(c->series[s].label) > longest
                      ? strlen(c->series[s].label)
                      : longest;
    if (c->dashed_label && strlen(c->dashed_label) > longest)
        longest = strlen(c->dashed_label);
    return 40 + (int)(CHAR_W * (double)(longest > 48 ? 48 : longest));
}

/* The grid with its tick labels (a category's at its position), the
 * frame and both axis titles: everything drawn under the series. */
static void draw_axes(FILE *out, const plot_chart *c, const axis *ax,
                      const axis *ay)
{
    char buf[64];
    int nx = c->xcats ? c->nxcats : ax->nticks;
    for (int i = 0; i < nx; i++) {
        double v = c->xcats ? i : ax->ticks[i];
        double px = ML + PW * axis_pos(ax, v);
        if (c->xcats)
            snprintf(buf, sizeof buf, "%s", c->xcats[i]);
        else
            tick_label(ax, v, buf, sizeof buf);
        fprintf(out,
                "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                "stroke=\"%s\"/>\n"
                "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\" "
                "fill=\"%s\">",
                px, MT, px, MT + PH + 5, grid, px, MT + PH + 19, ink2);
        svg_text(out, buf);
        fputs("</text>\n", out);
    }
    for (int i = 0; i < ay->nticks; i++) {
        double py = MT + PH * (1 - axis_pos(ay, ay->ticks[i]));
        tick_label(ay, ay->ticks[i], buf, sizeof buf);
        fprintf(out,
                "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" "
                "stroke=\"%s\"/>\n"
                "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\" fill=\"%s\">",
                ML - 5, py, ML + PW, py, grid, ML - 8, py + 4, ink2);
        svg_text(out, buf);
        fputs("</text>\n", out);
    }
    fprintf(out,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
            "fill=\"none\" stroke=\"%s\"/>\n",
            ML, MT, PW, PH, ink2);
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"%s\">",
            ML + PW / 2, MT + PH + 44, ink);
    axis_title(out, ax, c->xlabel);
    fprintf(out,
            "</text>\n<text transform=\"translate(%d %d) rotate(-90)\" "
            "text-anchor=\"middle\" fill=\"%s\">",
            22, MT + PH / 2, ink);
    axis_title(out, ay, c->ylabel);
    fputs("</text>\n", out);
}

/* Series s's line and its markers, each marker with a tooltip naming the
 * point (a reader hovers to read values the axis only approximates). */
static void draw_series(FILE *out, const plot_chart *c, const axis *ax,
                        const axis *ay, int s, int faint)
{
    const plot_series *p = &c->series[s];
    const char *color = colors[s % NCOLORS];
    fputs("<g class=\"series\" data-label=\"", out);
    svg_text(out, p->label);
    fputs("\">\n", out);
    polyline(out, ax, ay, p, p->y, 0, p->n, color, 0, faint);
    for (int i = 0; i < p->n; i++) {
        char xs[64], ys[64];
        if (c->xcats)
            snprintf(xs, sizeof xs, "%s", c->xcats[(int)p->x[i]]);
        else
            format_value(xs, sizeof xs, p->x[i], c->xunit);
        format_value(ys, sizeof ys, p->y[i], c->yunit);
        const char *tag = marker(out, s, marker_r(s, c->nseries),
                                 ML + PW * axis_pos(ax, p->x[i]),
                                 MT + PH * (1 - axis_pos(ay, p->y[i])), color);
        fputs("><title>", out);
        svg_text(out, p->label);
        fputs(": ", out);
        svg_text(out, c->xlabel);
        fputs(" = ", out);
        svg_text(out, xs);
        fputs(", ", out);
        svg_text(out, c->ylabel);
        fputs(" = ", out);
        svg_text(out, ys);
        fprintf(out, "</title></%s>\n", tag);
    }
    fputs("</g>\n", out);
}

/* Series s's dashed companion (a closed form), one polyline per run of
 * defined points: NaN marks a point where the closed form does not apply. */
static void draw_dashed(FILE *out, const axis *ax, const axis *ay,
                        const plot_series *p, int s)
{
    if (!p->dashed)
        return;
    for (int i = 0; i < p->n;) {
        while (i < p->n && isnan(p->dashed[i]))
            i++;
        int j = i;
        while (j < p->n && !isnan(p->dashed[j]))
            j++;
        if (j > i)
            polyline(out, ax, ay, p, p->dashed, i, j, colors[s % NCOLORS], 1,
                     0);
        i = j;
    }
}

/* The legend right of the plot: its title, one line and marker per
 * series, and the dashed line's meaning last. */
static void draw_legend(FILE *out, const plot_chart *c)
{
    int lx = ML + PW + LEGEND_GAP, ly = MT + 8;
    if (c->legend_title) {
        fprintf(out,
                "<text x=\"%d\" y=\"%d\" font-weight=\"bold\" fill=\"%s\">", lx,
                ly + 4, ink);
        svg_text(out, c->legend_title);
        fputs("</text>\n", out);
        ly += 22;
    }
    for (int s = 0; s < c->nseries; s++, ly += 20) {
        const char *color = colors[s % NCOLORS];
        fprintf(out,
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                "stroke-width=\"2.2\"/>",
                lx, ly, lx + 26, ly, color);
        marker(out, s, 4, lx + 13, ly, color);
        fprintf(out, "/>\n<text x=\"%d\" y=\"%d\" fill=\"%s\">", lx + 34,
                ly + 4, ink);
        svg_text(out, c->series[s].label);
        fputs("</text>\n", out);
    }
    if (c->dashed_label) {
        ly += 6;
        fprintf(out,
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                "stroke-width=\"1.6\" stroke-dasharray=\"7 4\"/>\n"
                "<text x=\"%d\" y=\"%d\" fill=\"%s\">",
                lx, ly, lx + 26, ly, ink2, lx + 34, ly + 4, ink);
        svg_text(out, c->dashed_label);
        fputs("</text>\n", out);
    }
}

int plot_svg(const plot_chart *c, FILE *out, ps_err *err)
{
    double xlo, xhi, ylo, yhi;
    ranges(c, &xlo, &xhi, &ylo, &yhi);
    axis ax, ay;
    if (c->xcats)
        axis_cats(&ax, c->nxcats);
    else
        axis_init(&ax, xlo, xhi, c->logx, c->logx && all_pow2(c), c->xunit);
    axis_init(&ay, ylo, yhi, c->logy, 0, c->yunit);

    int w = ML + PW + LEGEND_GAP + legend_width(c) + 16, h = MT + PH + MB;
    svg_begin(out, w, h,
              "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
              "font-size=\"12\"");
    fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", w, h);
    fprintf(out,
            "<text x=\"%d\" y=\"28\" font-size=\"15\" font-weight=\"bold\" "
            "fill=\"%s\">",
            ML, ink);
    svg_text(out, c->title);
    fputs("</text>\n", out);
    draw_axes(out, c, &ax, &ay);

    /* the measured lines with their markers, then the dashed companions
     * over them: a closed form that matches the simulation exactly must
     * still show (the measured lines are drawn faint then) */
    for (int s = 0; s < c->nseries; s++)
        draw_series(out, c, &ax, &ay, s, c->dashed_label != NULL);
    for (int s = 0; s < c->nseries; s++)
        draw_dashed(out, &ax, &ay, &c->series[s], s);
    draw_legend(out, c);
    fputs("</svg>\n", out);
    if (ferror(out))
        return ps_errf(err, "writing the plot failed");
    return PS_OK;
}
