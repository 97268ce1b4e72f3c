/* Text reports: the run comparison table and the per-run Gantt chart.
 *
 * The Gantt maps time to columns linearly (column c covers [c dt, (c+1) dt)
 * with dt = makespan / columns) and draws each compute event over the
 * columns its rounded ends span, so the glyph count of a rank is its busy
 * time / dt up to one column per event; an event too short for a column
 * still marks one idle column so that nothing that ran is invisible. */
#include "out/report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "out/dbcheck.h"
#include "out/report_impl.h"

/* ------------------------------------------------------------------ */
/* Formatting                                                          */
/* ------------------------------------------------------------------ */

int report_width_error(const char *shown, ps_err *err)
{
    return ps_errf(err, "width must be an integer in %d..%d, got %s",
                   REPORT_MIN_WIDTH, REPORT_MAX_WIDTH, shown);
}

int report_parse_width(const char *text, int *width, ps_err *err)
{
    char *end;
    errno = 0;
    long w = strtol(text, &end, 10);
    if (end != text && !*end && !errno && w >= REPORT_MIN_WIDTH &&
        w <= REPORT_MAX_WIDTH) {
        *width = (int)w;
        return PS_OK;
    }
    /* shown as ps.show shows a Lua value: numbers bare, other text quoted */
    char shown[80];
    (void)strtod(text, &end);
    if (end != text && !*end)
        snprintf(shown, sizeof shown, "%.60s", text);
    else
        snprintf(shown, sizeof shown, "'%.60s%s'", text,
                 strlen(text) > 60 ? "..." : "");
    return report_width_error(shown, err);
}

/* The unit a time axis or figure of magnitude s reads best in. */

/* ------------------------------------------------------------------ */
/* Memory warnings                                                     */
/* ------------------------------------------------------------------ */

/* Bytes in binary units with 4 significant digits: "402.1 GiB", "80 GiB". */
static const char *fmt_bytes_short(double b, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (fabs(b) >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, size, "%.4g %s", b, units[u]);
    return buf;
}

/* Per run over capacity: the rank with the largest peak / capacity and how
 * many ranks are over. Window functions: SQLite >= 3.25. */
static const char over_sql[] =
    "SELECT run, rank, peak_memory, capacity, n FROM (SELECT run, rank, "
    "peak_memory, capacity, count(*) OVER (PARTITION BY run) AS n, "
    "row_number() OVER (PARTITION BY run ORDER BY peak_memory / capacity "
    "DESC, rank) AS k FROM rank_stat WHERE fits = 0 AND (?1 = 0 OR run = "
    "?1)) WHERE k = 1 ORDER BY run";

int report_warnings(rec_db *db, int64_t run, FILE *out, int max_runs,
                    ps_err *err)
{
    rec_query *q = report_query(db, over_sql, run > 0 ? run : 0, err);
    if (!q)
        return PS_ERR;
    int rc, shown = 0, more = 0;
    while ((rc = rec_query_step(q, err)) == 1) {
        if (max_runs > 0 && shown == max_runs) {
            more++;
            continue;
        }
        char a[32], b[32];
        int64_t others = rec_query_int(q, 4) - 1;
        fprintf(out,
                "pipesim: warning: run %lld: rank %lld needs %s, device "
                "has %s",
                (long long)rec_query_int(q, 0), (long long)rec_query_int(q, 1),
                fmt_bytes_short(rec_query_double(q, 2), a, sizeof a),
                fmt_bytes_short(rec_query_double(q, 3), b, sizeof b));
        if (others > 0)
            fprintf(out, " (and %lld more rank%s over capacity)",
                    (long long)others, others == 1 ? "" : "s");
        fputc('\n', out);
        shown++;
    }
    rec_query_free(q);
    if (rc < 0)
        return PS_ERR;
    if (more > 0)
        fprintf(out,
                "pipesim: warning: %d more run%s need more memory than "
                "their devices have (column fits)\n",
                more, more == 1 ? "" : "s");
    return PS_OK;
}

/* ------------------------------------------------------------------ */
/* One run                                                             */
/* ------------------------------------------------------------------ */

typedef struct run_info {
    char kind[32], name[256], schedule[64], status[16], error[1024];
    int64_t p, m, v, dp, cp;
    double makespan, bubble, closed, peak;
    int has_bubble, has_closed, has_peak;
    int fits; /* 1, 0, or -1: unknown */
} run_info;

static const char run_sql[] =
    "SELECT kind, name, schedule, stages, microbatches, virtual_stages, dp, "
    "makespan, bubble, closed_form_bubble, coalesce(peak_memory, (SELECT "
    "max(peak) FROM memory_peak WHERE run = ?1)), status, error, fits, "
    "json_extract(params, '$.cp') FROM run WHERE id = ?1";

static int load_run(rec_db *db, int64_t run, run_info *ri, ps_err *err)
{
    rec_query *q = report_query(db, run_sql, run, err);
    if (!q)
        return PS_ERR;
    int rc = rec_query_step(q, err);
    if (rc == 0)
        rc = ps_errf(err, "run %lld not found in %s", (long long)run,
                     rec_path(db));
    if (rc == 1) {
        memset(ri, 0, sizeof *ri);
        snprintf(ri->kind, sizeof ri->kind, "%s", rec_query_text(q, 0));
        snprintf(ri->name, sizeof ri->name, "%s", rec_query_text(q, 1));
        snprintf(ri->schedule, sizeof ri->schedule, "%s", rec_query_text(q, 2));
        ri->p = rec_query_int(q, 3);
        ri->m = rec_query_int(q, 4);
        ri->v = rec_query_int(q, 5);
        ri->dp = rec_query_int(q, 6);
        ri->makespan = rec_query_double(q, 7);
        ri->has_bubble = !rec_query_isnull(q, 8);
        ri->bubble = rec_query_double(q, 8);
        ri->has_closed = !rec_query_isnull(q, 9);
        ri->closed = rec_query_double(q, 9);
        ri->has_peak = !rec_query_isnull(q, 10);
        ri->peak = rec_query_double(q, 10);
        snprintf(ri->status, sizeof ri->status, "%s", rec_query_text(q, 11));
        snprintf(ri->error, sizeof ri->error, "%s", rec_query_text(q, 12));
        ri->fits = rec_query_isnull(q, 13) ? -1 : rec_query_int(q, 13) != 0;
        /* context parallelism: ps.run's cp, kept in the inputs' JSON */
        ri->cp = rec_query_isnull(q, 14) ? 1 : rec_query_int(q, 14);
        rc = PS_OK;
    }
    rec_query_free(q);
    return rc;
}

static int print_summary(rec_db *db, int64_t run, const run_info *ri, int width,
                         FILE *final, ps_err *err)
{
    char a[64], b[64];
    char line[2048];
    FILE *out = fmemopen(line, sizeof line, "w");
    if (!out)
        return ps_errf(err, "out of memory for the summary");
    fprintf(out, "run %lld \"%s\": ", (long long)run, ri->name);
    if (strcmp(ri->kind, "collective") == 0) {
        rec_query *q = report_query(db,
                                    "SELECT op, algorithm, ranks, bytes, time, "
                                    "busbw FROM collective WHERE run = ?1",
                                    run, err);
        if (!q) {
            fclose(out);
            return PS_ERR;
        }
        int rc = rec_query_step(q, err);
        if (rc < 0) {
            rec_query_free(q);
            fclose(out);
            return PS_ERR;
        }
        if (rc == 1)
            fprintf(out,
                    "%s %s on %lld ranks, %s in %s, bus bandwidth "
                    "%.4g GB/s",
                    rec_query_text(q, 0), rec_query_text(q, 1),
                    (long long)rec_query_int(q, 2),
                    report_fmt_bytes(rec_query_double(q, 3), a, sizeof a),
                    report_fmt_time(rec_query_double(q, 4), b, sizeof b),
                    rec_query_double(q, 5) / 1e9);
        else
            fprintf(out, "collective, time %s",
                    report_fmt_time(ri->makespan, a, sizeof a));
        rec_query_free(q);
    } else {
        fprintf(out, "%s p=%lld m=%lld v=%lld", ri->schedule, (long long)ri->p,
                (long long)ri->m, (long long)ri->v);
        if (ri->dp > 1)
            fprintf(out, " dp=%lld", (long long)ri->dp);
        if (ri->cp > 1)
            fprintf(out, " cp=%lld", (long long)ri->cp);
        fprintf(out, ", makespan %s",
                report_fmt_time(ri->makespan, a, sizeof a));
        if (ri->has_bubble)
            fprintf(out, ", bubble %s",
                    report_fmt_pct(ri->bubble, a, sizeof a));
        if (ri->has_closed) {
            /* the formula is named when it is the plain one; split
             * backwards and the zero-bubble schedules have their own
             * (README "Schedules") */
            double plain = (ri->p - 1.0) / ((double)ri->v * ri->m + ri->p - 1);
            const char *form =
                ri->v > 1 ? "(p-1)/(v*m+p-1) " : "(p-1)/(m+p-1) ";
            if (fabs(ri->closed - plain) > 1e-9 * plain)
                form = "";
            fprintf(out, " vs closed form %s= %s", form,
                    report_fmt_pct(ri->closed, b, sizeof b));
        }
        if (ri->has_peak)
            fprintf(out, ", peak memory %s%s",
                    report_fmt_bytes(ri->peak, a, sizeof a),
                    ri->fits == 0 ? " (more than a device has)" : "");
    }
    fputc('\0', out);
    fclose(out);
    line[sizeof line - 1] = '\0';
    report_wrap(final, line, width);
    if (strcmp(ri->status, "ok") != 0)
        fprintf(final, "status %s: %s\n", ri->status, ri->error);
    return PS_OK;
}

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

/* Chunks per rank in the run's events (max chunk + 1), at least 1. */
static int64_t event_chunks(rec_db *db, int64_t run, ps_err *err)
{
    rec_query *q = report_query(
        db, "SELECT coalesce(max(chunk), 0) FROM event WHERE run = ?1", run,
        err);
    int64_t n = 1;
    if (q && rec_query_step(q, err) == 1 && !rec_query_isnull(q, 0))
        n = rec_query_int(q, 0) + 1;
    rec_query_free(q);
    return n >= 1 && n <= 64 ? n : 1; /* more would not be readable */
}

/* A chart being drawn: its rows (a rank's chunks), its columns (all
 * panels side by side, printed one below the other) and what each rank
 * did. */
typedef struct {
    int64_t nranks, nch; /* ranks; chunks per rank (rows per rank) */
    int cols, pcols;     /* columns of all panels; of one panel */
    int panels;
    double dt;      /* seconds per column */
    char *grid;     /* nranks * nch rows of cols glyphs */
    double *busy;   /* per rank: seconds of events drawn */
    double *bubble; /* per rank: rank_stat's bubble, NaN where absent */
    int kinds[7];   /* F B R W OPT FB other seen: the legend names these */
} gantt;

/* Columns enough that the shortest block holds its number and one glyph
 * (two-digit microbatches need three), in up to 4 panels of the width, one
 * below the other, each a slice of the time axis: returns the panels. */
static int gantt_panels(rec_db *db, int64_t run, int cols, double makespan,
                        ps_err *err)
{
    char digits[32];
    int panels = 1;
    rec_query *w =
        report_query(db,
                     "SELECT min(t_end - t_start), max(mb) FROM event "
                     "WHERE run = ?1 AND t_end > t_start AND mb >= 0",
                     run, err);
    if (w && rec_query_step(w, err) == 1 && !rec_query_isnull(w, 0)) {
        double shortest = rec_query_double(w, 0);
        int len = snprintf(digits, sizeof digits, "%lld",
                           (long long)rec_query_int(w, 1));
        double need = makespan / shortest * (len + 1);
        if (need > cols && isfinite(need))
            panels = need < 4.0 * cols ? (int)ceil(need / cols) : 4;
    }
    rec_query_free(w);
    return panels;
}

/* Draws one event into its row: its kind's glyph over its columns, its
 * microbatch over the first ones where the number leaves a glyph visible;
 * an event shorter than a column marks an idle column it falls in. */
static void gantt_block(gantt *g, char *row, char glyph_c, double t0, double t1,
                        rec_query *q)
{
    long c0 = lround(t0 / g->dt), c1 = lround(t1 / g->dt);
    c0 = c0 < 0 ? 0 : c0 > g->cols ? g->cols : c0;
    c1 = c1 < c0 ? c0 : c1 > g->cols ? g->cols : c1;
    if (c1 == c0) {
        if (t1 > t0 && c0 < g->cols && row[c0] == '.')
            row[c0] = glyph_c;
        return;
    }
    memset(row + c0, glyph_c, (size_t)(c1 - c0));
    if (!rec_query_isnull(q, 2)) {
        char lab[24];
        int len =
            snprintf(lab, sizeof lab, "%lld", (long long)rec_query_int(q, 2));
        if (len < c1 - c0) /* keep one glyph: the kind stays visible */
            memcpy(row + c0, lab, (size_t)len);
    }
}

/* Fills the grid from the run's events and each rank's bubble from
 * rank_stat (an events row outside the ranks or chunks is skipped: the
 * rows were checked before, this only guards the indexing). */
static int gantt_fill(gantt *g, rec_db *db, int64_t run, ps_err *err)
{
    static const char seen_glyphs[] = "-=~+#&";
    int rc = PS_OK;
    rec_query *q =
        report_query(db,
                     "SELECT rank, kind, mb, t_start, t_end, chunk FROM "
                     "event WHERE run = ?1 ORDER BY rank, t_start",
                     run, err);
    if (!q)
        rc = PS_ERR;
    while (q && (rc = rec_query_step(q, err)) == 1) {
        int64_t r = rec_query_int(q, 0);
        if (r < 0 || r >= g->nranks)
            continue;
        int64_t c = rec_query_isnull(q, 5) ? 0 : rec_query_int(q, 5);
        if (c < 0 || c >= g->nch)
            c = 0;
        double t0 = rec_query_double(q, 3), t1 = rec_query_double(q, 4);
        g->busy[r] += t1 - t0;
        char gl = glyph(rec_query_text(q, 1));
        const char *at = strchr(seen_glyphs, gl);
        g->kinds[at ? at - seen_glyphs : 6] = 1;
        gantt_block(g, g->grid + (r * g->nch + c) * g->cols, gl, t0, t1, q);
    }
    rec_query_free(q);
    if (rc != PS_OK)
        return rc;
    q = report_query(db, "SELECT rank, bubble FROM rank_stat WHERE run = ?1",
                     run, err);
    if (!q)
        rc = PS_ERR;
    while (q && (rc = rec_query_step(q, err)) == 1) {
        int64_t r = rec_query_int(q, 0);
        if (r >= 0 && r < g->nranks && !rec_query_isnull(q, 1))
            g->bubble[r] = rec_query_double(q, 1);
    }
    rec_query_free(q);
    return rc;
}

/* Prints the panels, each with its rows and its time axis; a rank's first
 * row ends with its bubble (rank_stat's, or 1 - busy / makespan). */
static void gantt_print(const gantt *g, int rw, int cw, int label,
                        double makespan, FILE *out)
{
    for (int pn = 0; pn < g->panels; pn++) {
        if (pn > 0)
            fputc('\n', out);
        for (int64_t r = 0; r < g->nranks; r++) {
            double b =
                isnan(g->bubble[r]) ? 1 - g->busy[r] / makespan : g->bubble[r];
            for (int64_t c = 0; c < g->nch; c++) {
                char tag[32] = "";
                const char *cells =
                    g->grid + (r * g->nch + c) * g->cols + pn * g->pcols;
                if (g->nch > 1)
                    snprintf(tag, sizeof tag, " c%-*lld", cw - 2, (long long)c);
                if (c == 0)
                    fprintf(out, "rank %*lld%s |%.*s| %5.1f%%\n", rw,
                            (long long)r, tag, g->pcols, cells, 100 * b);
                else
                    fprintf(out, "     %*s%s |%.*s|\n", rw, "", tag, g->pcols,
                            cells);
            }
        }
        print_axis(out, label, g->pcols, pn * g->pcols * g->dt, g->dt,
                   makespan);
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

/* One row per rank, or with several chunks one row per (rank, chunk), so
 * that chunks never share glyphs: "rank 0 c0 |...|". A block is labelled
 * with its microbatch where the number fits in it (two digits need two
 * columns). */
static int print_gantt(rec_db *db, int64_t run, const run_info *ri, int width,
                       int64_t nranks, double makespan, FILE *out, ps_err *err)
{
    (void)ri;
    gantt g = {.nranks = nranks};
    char digits[32];
    int rw = snprintf(digits, sizeof digits, "%lld", (long long)(nranks - 1));
    g.nch = event_chunks(db, run, err);
    int cw = g.nch > 1 ? snprintf(digits, sizeof digits, " c%lld",
                                  (long long)(g.nch - 1))
                       : 0;
    int label = 6 + rw + cw; /* "rank N cK " */
    int cols = width - label - 2 - 8;
    if (cols < 20)
        cols = 20;
    g.panels = gantt_panels(db, run, cols, makespan, err);
    g.pcols = cols;
    g.cols = cols * g.panels;
    g.dt = makespan / g.cols;
    int64_t nrows = nranks * g.nch;
    g.grid = malloc((size_t)(nrows * g.cols));
    g.busy = calloc((size_t)nranks, sizeof *g.busy);
    g.bubble = malloc((size_t)nranks * sizeof *g.bubble);
    int rc = PS_OK;
    if (!g.grid || !g.busy || !g.bubble) {
        rc = ps_errf(err, "out of memory for the chart");
        goto done;
    }
    memset(g.grid, '.', (size_t)(nrows * g.cols));
    for (int64_t r = 0; r < nranks; r++)
        g.bubble[r] = NAN;
    rc = gantt_fill(&g, db, run, err);
    if (rc == PS_OK) {
        gantt_print(&g, rw, cw, label, makespan, out);
        gantt_legend(&g, width, out);
    }
done:
    free(g.grid);
    free(g.busy);
    free(g.bubble);
    return rc < 0 ? PS_ERR : PS_OK;
}

int report_run(rec_db *db, int64_t run, FILE *out, int width, ps_err *err)
{
    run_info ri;
    /* rows are checked first: the chart indexes by rank and scales by
     * time, and the database may have been edited */
    if (load_run(db, run, &ri, err) || dbcheck_run(db, run, NULL, err) ||
        print_summary(db, run, &ri, width, out, err) ||
        report_efficiency(db, run, out, width, err))
        return PS_ERR;
    rec_query *q =
        report_query(db,
                     "SELECT (SELECT count(*) FROM event WHERE run = ?1), "
                     "(SELECT count(*) FROM memory WHERE run = ?1), "
                     "(SELECT max(r) FROM (SELECT max(rank) AS r FROM "
                     "event WHERE run = ?1 UNION ALL SELECT max(rank) "
                     "FROM rank_stat WHERE run = ?1)), "
                     "(SELECT max(t_end) FROM event WHERE run = ?1)",
                     run, err);
    if (!q || rec_query_step(q, err) != 1) {
        rec_query_free(q);
        return PS_ERR;
    }
    int64_t events = rec_query_int(q, 0), memory = rec_query_int(q, 1);
    int64_t nranks = rec_query_int(q, 2) + 1;
    double t_end = rec_query_double(q, 3);
    rec_query_free(q);
    if (events == 0) {
        if (strcmp(ri.status, "ok") != 0)
            fprintf(out, "(no timeline: the run failed)\n");
        else if (memory == 0)
            fprintf(out,
                    "(no timeline: run recorded with record = \"summary\")\n");
        else
            fprintf(out, "(no compute events in this run)\n");
        return PS_OK;
    }
    double makespan = ri.makespan > t_end ? ri.makespan : t_end;
    if (!(makespan > 0)) {
        fprintf(out, "(no timeline: makespan is 0)\n");
        return PS_OK;
    }
    return print_gantt(db, run, &ri, width, nranks, makespan, out, err);
}

/* ------------------------------------------------------------------ */
/* One run as CSV                                                      */
/* ------------------------------------------------------------------ */

int report_run_csv(rec_db *db, int64_t run, FILE *out, ps_err *err)
{
    static const char *const cols[] = {
        "rank",   "busy",         "bubble",   "static_memory", "peak_memory",
        "t_peak", "exposed_comm", "capacity", "fits",
    };
    enum { N = sizeof cols / sizeof cols[0] };
    rec_query *q =
        report_query(db, "SELECT count(*) FROM run WHERE id = ?1", run, err);
    if (!q || rec_query_step(q, err) != 1) {
        rec_query_free(q);
        return PS_ERR;
    }
    int64_t found = rec_query_int(q, 0);
    rec_query_free(q);
    if (!found)
        return ps_errf(err, "run %lld not found in %s", (long long)run,
                       rec_path(db));
    q = report_query(
        db,
        "SELECT rank, busy, bubble, static_memory, peak_memory, t_peak, "
        "exposed_comm, capacity, fits FROM rank_stat WHERE run = ?1 "
        "ORDER BY rank",
        run, err);
    if (!q)
        return PS_ERR;
    fputs("run", out);
    for (int c = 0; c < N; c++)
        fprintf(out, ",%s", cols[c]);
    fputc('\n', out);
    int rc;
    while ((rc = rec_query_step(q, err)) == 1) {
        fprintf(out, "%lld", (long long)run);
        for (int c = 0; c < N; c++) {
            fputc(',', out);
            if (rec_query_isnull(q, c))
                continue;
            if (c == 0 || c == N - 1) /* rank, fits */
                fprintf(out, "%lld", (long long)rec_query_int(q, c));
            else
                fprintf(out, "%.17g", rec_query_double(q, c));
        }
        fputc('\n', out);
    }
    rec_query_free(q);
    return rc == 0 ? PS_OK : PS_ERR;
}
