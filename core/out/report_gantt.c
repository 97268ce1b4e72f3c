/* The Gantt chart of `pipesim report DB RUN` (issue 28): one row per
 * simulated rank, as the exports draw them (out/export_run.h: a rank
 * standing for its TP group is labelled with the group's cluster ranks),
 * one row per model chunk of it with virtual stages, of the part of the
 * run the view draws (out/view.h). A run with several data-parallel
 * replicas draws replica 0 alone above REPORT_AUTO_ROWS ranks, and says
 * how to get everything.
 *
 * Time maps to columns linearly (column c covers [t0 + c dt, t0 + (c+1)
 * dt) with dt = span / columns, the span [0, makespan] or the window) and
 * each compute event covers the columns its rounded ends span, so the
 * glyph count of a rank is its busy time / dt up to one column per event;
 * an event too short for a column still marks one idle column so that
 * nothing that ran is invisible. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "out/export_run.h"
#include "out/report.h"
#include "out/report_impl.h"

/* Glyph that fills a compute event of kind; labels are the microbatch.
 * The two halves of an overlapped FB ("FB.F", "FB.B") share '&', the
 * DeepSeek-V3 report's "F&B". */
static char glyph(const char *kind)
{
    if (strncmp(kind, "FB.", 3) == 0)
        return '&';
    switch (kind[0]) {
    case 'F': return '-';
    case 'B': return '=';
    case 'R': return '~';
    case 'W': return '+';
    case 'O': return '#';
    default: return '*';
    }
}

/* A 1-2-5 step of at least raw. */
static double nice_step(double raw)
{
    double e = pow(10, floor(log10(raw)));
    double f = raw / e;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e;
}

/* The axis under the timeline (ticks every ~12 columns) and its labels,
 * the last one carrying the unit. */
static void print_axis(FILE *out, int indent, int cols, double t_first,
                       double dt, double makespan)
{
    const char *unit;
    double scale = report_time_unit(makespan, &unit);
    /* dt * 12, not makespan * 12 / cols: makespan may be near DBL_MAX
     * (a hand-edited database), where the product is infinite, the step
     * NaN and the tick loop never ended */
    double step = nice_step(dt * 12);
    if (!(step > 0 && isfinite(step)))
        step = makespan;
    char *ticks = malloc((size_t)cols + 2);
    char *labels = malloc((size_t)cols + 64);
    if (!ticks || !labels) {
        free(ticks);
        free(labels);
        return;
    }
    memset(ticks, '-', (size_t)cols + 1);
    ticks[cols + 1] = '\0';
    memset(labels, ' ', (size_t)cols + 63);
    labels[cols + 63] = '\0';
    int end = 0; /* first free label column */
    double k0 = ceil(t_first / step - 1e-9);
    if (!isfinite(k0))
        k0 = 0;
    for (int k = 0; k <= cols; k++) { /* at most a tick per column */
        double t = (k0 + k) * step, x = (t - t_first) / dt;
        if (!(x <= cols + 0.5))
            break;
        int c = (int)lround(x);
        ticks[c] = '+';
        char lab[48];
        int len = snprintf(lab, sizeof lab, "%.4g", t / scale);
        /* the unit goes on the last label that fits */
        if (((k0 + k + 1) * step - t_first) / dt > cols + 0.5)
            len = snprintf(lab, sizeof lab, "%.4g %s", t / scale, unit);
        if (c >= end && c + len < cols + 63) {
            memcpy(labels + c, lab, (size_t)len);
            end = c + len + 1;
        }
    }
    int last = cols + 62;
    while (last >= 0 && labels[last] == ' ')
        labels[last--] = '\0';
    fprintf(out, "%*s%s\n%*s%s\n", indent, "", ticks, indent, "", labels);
    free(ticks);
    free(labels);
}

/* A chart being drawn: its rows (a rank's chunks), its columns (all
 * panels side by side, printed one below the other) and the run. */
typedef struct {
    const export_run *r;
    int64_t nch;     /* chunks per rank (rows per rank) */
    int cols, pcols; /* columns of all panels; of one panel */
    int panels;
    double t0, dt; /* the axis' start; seconds per column */
    char *grid;    /* nranks * nch rows of cols glyphs */
    int kinds[7];  /* F B R W OPT FB other seen: the legend names these */
} gantt;

/* Chunks per rank in the events (max chunk + 1), 1 to 64 (more would not
 * be readable: their events share the first row). */
static int64_t event_chunks(const export_run *r)
{
    int64_t n = 1;
    for (int32_t i = 0; i < r->nev; i++)
        if (r->ev[i].chunk + 1 > n)
            n = r->ev[i].chunk + 1;
    return n <= 64 ? n : 1;
}

/* Columns enough that the shortest block holds its number and one glyph
 * (two-digit microbatches need three), in up to 4 panels of the width, one
 * below the other, each a slice of the time axis: returns the panels. */
static int gantt_panels(const export_run *r, int cols, double span)
{
    double shortest = INFINITY;
    int32_t mb = 0;
    for (int32_t i = 0; i < r->nev; i++) {
        double d = r->ev[i].t1 - r->ev[i].t0;
        if (d > 0 && r->ev[i].mb >= 0) {
            shortest = fmin(shortest, d);
            mb = r->ev[i].mb > mb ? r->ev[i].mb : mb;
        }
    }
    if (!isfinite(shortest))
        return 1;
    char digits[16];
    int len = snprintf(digits, sizeof digits, "%d", (int)mb);
    double need = span / shortest * (len + 1);
    if (need > cols && isfinite(need))
        return need < 4.0 * cols ? (int)ceil(need / cols) : 4;
    return 1;
}

/* Draws one event into its row: its kind's glyph over its columns, its
 * microbatch over the first ones where the number leaves a glyph visible;
 * an event shorter than a column marks an idle column it falls in. */
static void gantt_block(gantt *g, char *row, char glyph_c,
                        const export_event *e)
{
    long c0 = lround((e->t0 - g->t0) / g->dt);
    long c1 = lround((e->t1 - g->t0) / g->dt);
    c0 = c0 < 0 ? 0 : c0 > g->cols ? g->cols : c0;
    c1 = c1 < c0 ? c0 : c1 > g->cols ? g->cols : c1;
    if (c1 == c0) {
        if (e->t1 > e->t0 && c0 < g->cols && row[c0] == '.')
            row[c0] = glyph_c;
        return;
    }
    memset(row + c0, glyph_c, (size_t)(c1 - c0));
    if (e->mb >= 0) {
        char lab[24];
        int len = snprintf(lab, sizeof lab, "%d", (int)e->mb);
        if (len < c1 - c0) /* keep one glyph: the kind stays visible */
            memcpy(row + c0, lab, (size_t)len);
    }
}

/* Fills the grid from the events (ordered by rank, as the rows). */
static void gantt_fill(gantt *g)
{
    static const char seen_glyphs[] = "-=~+#&";
    const export_run *r = g->r;
    int32_t e = 0;
    for (int32_t i = 0; i < r->nranks; i++) {
        while (e < r->nev && r->ev[e].rank < r->ranks[i].rank)
            e++;
        for (; e < r->nev && r->ev[e].rank == r->ranks[i].rank; e++) {
            const export_event *ev = &r->ev[e];
            int64_t c = ev->chunk >= 0 && ev->chunk < g->nch ? ev->chunk : 0;
            char gl = glyph(ev->kind);
            const char *at = strchr(seen_glyphs, gl);
            g->kinds[at ? at - seen_glyphs : 6] = 1;
            gantt_block(g, g->grid + (i * g->nch + c) * g->cols, gl, ev);
        }
    }
}

/* Prints the panels, each with its rows and its time axis; a rank's first
 * row ends with its bubble over the whole run. */
static void gantt_print(const gantt *g, int lw, int cw, FILE *out)
{
    const export_run *r = g->r;
    for (int pn = 0; pn < g->panels; pn++) {
        if (pn > 0)
            fputc('\n', out);
        for (int32_t i = 0; i < r->nranks; i++) {
            double b = r->ranks[i].bubble;
            for (int64_t c = 0; c < g->nch; c++) {
                char tag[32] = "";
                const char *cells =
                    g->grid + (i * g->nch + c) * g->cols + pn * g->pcols;
                if (g->nch > 1)
                    snprintf(tag, sizeof tag, " c%-*lld", cw - 2, (long long)c);
                if (c > 0)
                    fprintf(out, "%-*s%s |%.*s|\n", lw, "", tag, g->pcols,
                            cells);
                else if (isnan(b))
                    fprintf(out, "%-*s%s |%.*s|      -\n", lw,
                            r->ranks[i].label, tag, g->pcols, cells);
                else
                    fprintf(out, "%-*s%s |%.*s| %5.1f%%\n", lw,
                            r->ranks[i].label, tag, g->pcols, cells, 100 * b);
            }
        }
        print_axis(out, lw + cw + 1, g->pcols, g->t0 + pn * g->pcols * g->dt,
                   g->dt, g->t0 + g->cols * g->dt);
    }
}

/* The legend names only the kinds the chart shows. */
static void gantt_legend(const gantt *g, int width, FILE *out)
{
    char legend[640];
    snprintf(legend, sizeof legend,
             "legend: 3--- forward of microbatch 3, 3=== backward%s%s%s%s%s"
             ", . idle, %% = rank's bubble%s",
             g->kinds[2] ? ", 3~~~ recompute" : "",
             g->kinds[3] ? ", 3+++ weight gradient (W)" : "",
             g->kinds[4] ? ", ### optimizer" : "",
             g->kinds[5] ? ", 3&&& overlapped forward and backward (FB: "
                           "the forward's microbatch on its chunk's row, "
                           "the backward's on its own)"
                         : "",
             g->kinds[6] ? ", *** other" : "",
             g->nch > 1 ? ", a row per model chunk (c0, c1, ...)" : "");
    report_wrap(out, legend, width);
}

/* The note under a chart that does not draw everything: what it draws
 * and how to ask for the rest. */
static void gantt_note(const export_run *r, int width, FILE *out)
{
    if (!*r->view)
        return;
    char note[400];
    snprintf(note, sizeof note, "drawn: %s", r->view);
    report_wrap(out, note, width);
}

int report_gantt(rec_db *db, int64_t run, const out_view *view, int width,
                 double makespan, FILE *out, ps_err *err)
{
    out_view v;
    if (view)
        v = *view;
    else
        view_init(&v);
    if (v.auto_ranks == 0)
        v.auto_ranks = REPORT_AUTO_ROWS;
    export_run r;
    if (export_run_load(db, run, &v, &r, err))
        return PS_ERR;
    gantt g = {.r = &r};
    g.nch = event_chunks(&r);
    /* the label column: the longest label, then " cK" per chunk */
    int lw = 4;
    for (int32_t i = 0; i < r.nranks; i++) {
        int n = (int)strlen(r.ranks[i].label);
        lw = n > lw ? n : lw;
    }
    char digits[32];
    int cw = g.nch > 1 ? snprintf(digits, sizeof digits, " c%lld",
                                  (long long)(g.nch - 1))
                       : 0;
    int cols = width - (lw + cw + 1) - 2 - 8;
    if (cols < 20)
        cols = 20;
    g.t0 = v.windowed ? v.t0 : 0;
    double t1 = v.windowed ? fmin(v.t1, makespan) : makespan;
    if (!(t1 > g.t0))
        t1 = g.t0 + makespan;
    g.panels = gantt_panels(&r, cols, t1 - g.t0);
    g.pcols = cols;
    g.cols = cols * g.panels;
    g.dt = (t1 - g.t0) / g.cols;
    int64_t nrows = (int64_t)r.nranks * g.nch;
    g.grid = malloc((size_t)(nrows * g.cols) + 1);
    int rc = PS_OK;
    if (!g.grid) {
        rc = ps_errf(err, "out of memory for the chart");
    } else {
        memset(g.grid, '.', (size_t)(nrows * g.cols));
        gantt_fill(&g);
        gantt_print(&g, lw, cw, out);
        gantt_legend(&g, width, out);
        gantt_note(&r, width, out);
    }
    free(g.grid);
    export_run_free(&r);
    return rc;
}
