/* SVG Gantt chart of one or more runs on one time scale: per run a title,
 * a row per rank (compute rects, a thin transfer lane, idle background, the
 * rank's bubble), a time axis, and the ranks' memory as step lines with the
 * device capacity when known. Plain SVG 1.1 with inline attributes, so it
 * renders the same in browsers, rsvg and document editors. */
#include "out/export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "out/export_run.h"
#include "out/svg.h"

/* ------------------------------------------------------------------ */
/* SVG Gantt                                                           */
/* ------------------------------------------------------------------ */

/* Geometry in px: the plot spans [ML, ML + PW]; each rank row is a compute
 * bar of height RH with a transfer lane of height CH under it. */
enum {
    SVG_W = 1200,
    ML = 76,
    MR = 64,
    PW = SVG_W - ML - MR,
    LEGEND_H = 38,
    TITLE_H = 30,
    VIEW_H = 16, /* the title's line saying what is drawn */
    RH = 20,
    CH = 4,
    PITCH = RH + CH + 8,
    AXIS_H = 30,
    MEM_CAP_H = 22, /* memory caption above the panel */
    MH = 84,
    BLOCK_GAP = 26
};

typedef struct op_style {
    const char *kind, *label, *fill;
} op_style;

static const op_style op_styles[] = {
    {"F", "forward", "#4e79a7"},
    {"B", "backward", "#59a14f"},
    {"W", "weight grad", "#8cd17d"},
    {"R", "recompute", "#b07aa1"},
    {"OPT", "optimizer", "#9c755f"},
    /* the two halves of an overlapped FB: one colour, one legend entry */
    {"FB.F", "overlapped F&B", "#e15759"},
    {"FB.B", "", "#e15759"},
};
#define NSTYLES ((int)(sizeof op_styles / sizeof op_styles[0]))
static const char other_fill[] = "#bab0ac";
static const char comm_fill[] = "#f28e2b";
static const char idle_fill[] = "#eef0f4";
static const char ink[] = "#1f2933";  /* titles, labels */
static const char ink2[] = "#52606d"; /* secondary text */
static const char grid[] = "#dde1e7";

/* Line colours of the memory curves, by rank. */
static const char *const rank_colors[] = {
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b",
    "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#ff7f0e",
};
#define NRANK_COLORS ((int)(sizeof rank_colors / sizeof rank_colors[0]))
#define MAX_TICKS 100 /* per axis: nice steps give about 8 */

static int style_of(const char *kind)
{
    for (int i = 0; i < NSTYLES; i++)
        if (strcmp(kind, op_styles[i].kind) == 0)
            return i;
    return -1;
}

/* fill, lightened towards white by f in [0, 1] (later virtual chunks are
 * lighter), into out as #rrggbb; *dark_text says whether black text reads
 * better on it than white. */
static void tint(const char *fill, double f, char out[8], int *dark_text)
{
    unsigned rgb[3];
    sscanf(fill + 1, "%2x%2x%2x", &rgb[0], &rgb[1], &rgb[2]);
    double lum = 0;
    static const double w[3] = {0.299, 0.587, 0.114};
    for (int i = 0; i < 3; i++) {
        rgb[i] = (unsigned)lround(rgb[i] + (255 - rgb[i]) * f);
        lum += w[i] * rgb[i] / 255.0;
    }
    snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
    *dark_text = lum > 0.62;
}

/* 1, 2 or 5 times a power of ten, near span / target. */
static double nice_step(double span, int target)
{
    double raw = span / target;
    double base = pow(10, floor(log10(raw)));
    double f = raw / base;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * base;
}

/* Decimals that show a multiple of step exactly (step = 1/2/5 x 10^k). */
static int step_decimals(double step)
{
    if (!(step > 0) || !isfinite(step)) /* a degenerate axis */
        return 0;
    double d = -floor(log10(step) + 1e-9);
    return d > 0 ? (int)fmin(d, 20) : 0;
}

typedef struct tunit {
    const char *name;
    double scale; /* display value = seconds * scale */
} tunit;

static tunit time_unit(double span)
{
    if (span >= 1)
        return (tunit){"s", 1};
    if (span >= 1e-3)
        return (tunit){"ms", 1e3};
    return (tunit){"us", 1e6};
}

static void fmt_time(double t, char *buf, size_t n)
{
    tunit u = time_unit(t);
    double v = t * u.scale;
    snprintf(buf, n, "%.*f %s", v >= 100 ? 1 : v >= 10 ? 2 : 3, v, u.name);
}

typedef struct bunit {
    const char *name;
    double size;
} bunit;

static bunit byte_unit(double b)
{
    static const bunit units[] = {{"TiB", 1099511627776.0},
                                  {"GiB", 1073741824.0},
                                  {"MiB", 1048576.0},
                                  {"KiB", 1024.0}};
    for (int i = 0; i < 4; i++)
        if (b >= units[i].size)
            return units[i];
    return (bunit){"B", 1};
}

static void fmt_bytes(double b, char *buf, size_t n)
{
    bunit u = byte_unit(b);
    double v = b / u.size;
    if (v == floor(v))
        snprintf(buf, n, "%.0f %s", v, u.name);
    else
        snprintf(buf, n, "%.*f %s", v >= 100 ? 0 : 1, v, u.name);
}

typedef struct svg_ctx {
    FILE *out;
    double tmax; /* the shared time scale: largest makespan, or --window's
                    end */
    double ymax; /* the shared memory scale */
    double t0;   /* where the scale starts: 0, or --window's start */
} svg_ctx;

/* The x of time t, clamped to the scale (a window cuts what crosses it). */
static double xs(const svg_ctx *c, double t)
{
    double span = c->tmax - c->t0;
    t = t < c->t0 ? c->t0 : t > c->tmax ? c->tmax : t;
    return ML + (span > 0 ? (t - c->t0) / span : 0) * PW;
}

/* The title's height: a second line says what is drawn of the run. */
static int title_height(const export_run *r)
{
    return TITLE_H + (*r->view ? VIEW_H : 0);
}

static int block_height(const export_run *r)
{
    int h = title_height(r) + r->nranks * PITCH + AXIS_H;
    if (r->nmem > 0)
        h += MEM_CAP_H + MH + 12;
    return h + BLOCK_GAP;
}

static void svg_legend(svg_ctx *c, const export_run *runs, int nruns)
{
    int has[NSTYLES + 1] = {0}, comm = 0, chunks = 0;
    for (int k = 0; k < nruns; k++) {
        for (int32_t i = 0; i < runs[k].nev; i++) {
            int s = style_of(runs[k].ev[i].kind);
            if (s >= 0 && !op_styles[s].label[0])
                s--; /* FB.B: listed as FB.F, the entry before it */
            has[s < 0 ? NSTYLES : s] = 1;
            chunks |= runs[k].ev[i].chunk > 0;
        }
        for (int32_t i = 0; i < runs[k].ntr; i++)
            comm |= runs[k].tr[i].t1 > runs[k].tr[i].t0;
        chunks |= runs[k].v > 1;
    }
    FILE *out = c->out;
    double x = ML;
    fputs("<g class=\"legend\" font-size=\"11\">\n", out);
    for (int i = 0; i <= NSTYLES + 2; i++) {
        const char *fill, *label;
        if (i < NSTYLES) {
            if (!has[i])
                continue;
            fill = op_styles[i].fill;
            label = op_styles[i].label;
        } else if (i == NSTYLES) {
            if (!has[i])
                continue;
            fill = other_fill;
            label = "other";
        } else if (i == NSTYLES + 1) {
            if (!comm)
                continue;
            fill = comm_fill;
            label = "transfer";
        } else {
            fill = idle_fill;
            label = "idle";
        }
        fprintf(out,
                "<rect class=\"swatch\" x=\"%.1f\" y=\"13\" width=\"12\" "
                "height=\"12\" rx=\"2\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"23\" fill=\"%s\">",
                x, fill, x + 17, ink);
        svg_text(out, label); /* "overlapped F&B" */
        fputs("</text>\n", out);
        x += 17 + 6.4 * (double)strlen(label) + 18;
    }
    if (chunks)
        fprintf(out,
                "<text x=\"%.1f\" y=\"23\" fill=\"%s\">lighter shade = "
                "later chunk; labels are microbatches</text>\n",
                x + 6, ink2);
    else
        fprintf(out,
                "<text x=\"%.1f\" y=\"23\" fill=\"%s\">labels are "
                "microbatches</text>\n",
                x + 6, ink2);
    fputs("</g>\n", out);
}

static void svg_title(svg_ctx *c, const export_run *r, int y)
{
    char ms[32], bub[32] = "-";
    fmt_time(r->makespan, ms, sizeof ms);
    if (!isnan(r->bubble))
        snprintf(bub, sizeof bub, "%.1f%%", 100 * r->bubble);
    fprintf(c->out,
            "<text x=\"12\" y=\"%d\" font-size=\"14\" fill=\"%s\">"
            "<tspan font-weight=\"bold\">",
            y + 18, ink);
    svg_text(c->out, r->name);
    fprintf(c->out,
            "</tspan><tspan dx=\"10\" fill=\"%s\" "
            "font-size=\"12\">run %lld",
            ink2, (long long)r->id);
    if (*r->schedule) {
        fputs(" \xc2\xb7 ", c->out);
        svg_text(c->out, r->schedule);
    }
    if (strcmp(r->kind, "pipeline") == 0)
        fprintf(c->out, " \xc2\xb7 p=%d m=%d v=%d", (int)r->stages,
                (int)r->microbatches, (int)r->v);
    if (r->dp > 1)
        fprintf(c->out, " dp=%d", (int)r->dp);
    fprintf(c->out, " \xc2\xb7 makespan %s \xc2\xb7 bubble %s", ms, bub);
    fputs("</tspan></text>\n", c->out);
    if (*r->view) { /* what is drawn of it (export.h), a line of its own */
        fprintf(c->out,
                "<text class=\"view\" x=\"12\" y=\"%d\" font-size=\"11\" "
                "fill=\"%s\">drawn: ",
                y + 18 + VIEW_H, ink2);
        svg_text(c->out, r->view);
        fputs("</text>\n", c->out);
    }
}

/* Vertical grid lines and, at y_axis, the time axis with labels. */
static void svg_axis(svg_ctx *c, int y_top, int y_axis)
{
    FILE *out = c->out;
    tunit u = time_unit(c->tmax);
    double step = nice_step((c->tmax - c->t0) * u.scale, 8);
    int dec = step_decimals(step);
    /* the ticks from the first at or after the scale's start */
    double from = ceil(c->t0 * u.scale / step * (1 - 1e-9));
    int first = from < 1e9 ? (int)from : 1000000000;
    fprintf(out, "<g class=\"grid\" stroke=\"%s\" stroke-width=\"1\">\n", grid);
    /* i <= MAX_TICKS: the bound is infinite for a time near DBL_MAX */
    for (int i = first + 1;
         i <= first + MAX_TICKS && i * step <= c->tmax * u.scale * (1 + 1e-9);
         i++) {
        double x = xs(c, i * step / u.scale);
        fprintf(out, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\"/>\n", x,
                y_top, x, y_axis);
    }
    fputs("</g>\n", out);
    fprintf(out,
            "<g class=\"axis\" font-size=\"10\" fill=\"%s\" "
            "text-anchor=\"middle\">\n"
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\"/>\n",
            ink2, ML, y_axis, ML + PW, y_axis, "#9aa5b1");
    for (int i = first;
         i <= first + MAX_TICKS && i * step <= c->tmax * u.scale * (1 + 1e-9);
         i++) {
        double x = xs(c, i * step / u.scale);
        fprintf(out,
                "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                "stroke=\"#9aa5b1\"/>"
                "<text x=\"%.2f\" y=\"%d\">%.*f %s</text>\n",
                x, y_axis, x, y_axis + 4, x, y_axis + 15, dec, i * step,
                u.name);
    }
    fputs("</g>\n", out);
}

static void svg_op(svg_ctx *c, const export_run *r, const export_event *e,
                   double y)
{
    FILE *out = c->out;
    int s = style_of(e->kind);
    double f = 0;
    /* DualPipe's runs record v = 1 but two chunks (copies) per rank */
    if (e->chunk > 0)
        f = 0.45 * e->chunk / (r->v > 1 ? r->v - 1 : 1);
    char fill[8], name[64], t0[32], t1[32];
    int dark;
    tint(s < 0 ? other_fill : op_styles[s].fill, f, fill, &dark);
    double x0 = xs(c, e->t0), x1 = xs(c, e->t1);
    double w = x1 - x0 < 0.5 ? 0.5 : x1 - x0;
    export_event_name(r, e, name, sizeof name);
    fmt_time(e->t0, t0, sizeof t0);
    fmt_time(e->t1, t1, sizeof t1);
    fprintf(out, "<rect class=\"op ");
    svg_text(out, s < 0 ? "other" : op_styles[s].kind);
    fprintf(out,
            "\" data-run=\"%lld\" data-rank=\"%d\" x=\"%.2f\" y=\"%.1f\" "
            "width=\"%.2f\" height=\"%d\" rx=\"1.5\" fill=\"%s\" "
            "stroke=\"#fff\" stroke-width=\"0.6\"><title>rank %d: ",
            (long long)r->id, (int)e->rank, x0, y, w, RH, fill, (int)e->rank);
    svg_text(out, name);
    if (e->stage >= 0)
        fprintf(out, " (stage %d)", (int)e->stage);
    fprintf(out, ", %s to %s</title></rect>\n", t0, t1);
    if (e->mb >= 0) {
        char label[16];
        int n = snprintf(label, sizeof label, "%d", (int)e->mb);
        if (w >= 6.2 * n + 4)
            fprintf(out,
                    "<text x=\"%.2f\" y=\"%.1f\" font-size=\"10\" "
                    "text-anchor=\"middle\" fill=\"%s\" "
                    "pointer-events=\"none\">%s</text>\n",
                    x0 + w / 2, y + RH / 2.0 + 3.5, dark ? ink : "#fff", label);
    }
}

static void svg_transfer(svg_ctx *c, const export_run *r,
                         const export_transfer *t, int recv, double y)
{
    if (!(t->t1 > t->t0))
        return; /* free communication has nothing to draw */
    char name[128], bytes[32], t0[32], t1[32];
    export_transfer_name(r, t, recv, name, sizeof name);
    fmt_bytes(t->bytes, bytes, sizeof bytes);
    fmt_time(t->t0, t0, sizeof t0);
    fmt_time(t->t1, t1, sizeof t1);
    double x0 = xs(c, t->t0), x1 = xs(c, t->t1);
    fprintf(c->out,
            "<rect class=\"comm\" data-rank=\"%d\" x=\"%.2f\" y=\"%.1f\" "
            "width=\"%.2f\" height=\"%d\" fill=\"%s\"%s><title>rank %d: ",
            (int)(recv ? t->dst : t->src), x0, y, x1 - x0 < 0.8 ? 0.8 : x1 - x0,
            CH, comm_fill, recv ? " fill-opacity=\"0.55\"" : "",
            (int)(recv ? t->dst : t->src));
    svg_text(c->out, name);
    fprintf(c->out, ", %s, %s to %s</title></rect>\n", bytes, t0, t1);
}

/* A row label's attributes: one longer than the margin holds at 11 px (a
 * TP group's "ranks 1016-1023") is set smaller, down to 6 px, and then
 * squeezed into it (textLength, which librsvg 2.54 ignores: hence the
 * size). */
static const char *fit_label(const char *label, char *buf, size_t n)
{
    size_t len = strlen(label);
    if (len <= 11)
        return " font-size=\"11\"";
    snprintf(buf, n,
             " font-size=\"%.1f\" textLength=\"66\" "
             "lengthAdjust=\"spacingAndGlyphs\"",
             fmax(6, 11.0 * 11 / (double)len));
    return buf;
}

/* The memory panel: a step line per rank, the capacity dashed. */
static void svg_memory(svg_ctx *c, const export_run *r, int y)
{
    FILE *out = c->out;
    int top = y + MEM_CAP_H, bottom = top + MH;
    fprintf(out, "<g class=\"memory\" data-run=\"%lld\">\n", (long long)r->id);
    fprintf(out,
            "<text x=\"%d\" y=\"%d\" font-size=\"11\" font-weight=\"bold\" "
            "fill=\"%s\">memory</text>\n",
            ML, y + 14, ink);
    double lx = ML + 62;
    for (int32_t i = 0; i < r->nranks; i++) {
        const char *col = rank_colors[r->ranks[i].rank % NRANK_COLORS];
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                "stroke=\"%s\" stroke-width=\"2\"/><text x=\"%.1f\" "
                "y=\"%d\" font-size=\"10\" fill=\"%s\">%s</text>\n",
                lx, y + 10, lx + 14, y + 10, col, lx + 18, y + 14, ink2,
                r->ranks[i].label);
        lx += fmax(66, 24 + 6.0 * (double)strlen(r->ranks[i].label));
    }
    /* y axis: nice ticks in a binary unit */
    bunit u = byte_unit(c->ymax);
    double step = nice_step(c->ymax / u.size, 3);
    int dec = step_decimals(step);
    for (int i = 0; i <= MAX_TICKS && i * step <= c->ymax / u.size * (1 + 1e-9);
         i++) {
        double yy = bottom - i * step * u.size / c->ymax * MH;
        fprintf(out,
                "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" "
                "stroke=\"%s\"/><text x=\"%d\" y=\"%.2f\" font-size=\"10\" "
                "text-anchor=\"end\" fill=\"%s\">%.*f %s</text>\n",
                ML, yy, ML + PW, yy, i ? grid : "#9aa5b1", ML - 6, yy + 3.5,
                ink2, dec, i * step, u.name);
    }
    if (r->capacity > 0) {
        char cap[32];
        fmt_bytes(r->capacity, cap, sizeof cap);
        double yy = bottom - r->capacity / c->ymax * MH;
        fprintf(out,
                "<line class=\"capacity\" x1=\"%d\" y1=\"%.2f\" x2=\"%d\" "
                "y2=\"%.2f\" stroke=\"#c0392b\" stroke-width=\"1.2\" "
                "stroke-dasharray=\"6 4\"/><text x=\"%d\" y=\"%.2f\" "
                "font-size=\"10\" text-anchor=\"end\" fill=\"#c0392b\">"
                "device memory %s</text>\n",
                ML, yy, ML + PW, yy, ML + PW, yy - 3, cap);
    } else {
        fputs("<!-- no device capacity line: the run's params do not give "
              "the device memory -->\n",
              out);
    }
    /* memory rows are of r->ranks, both ordered by rank */
    for (int32_t i = 0, k = 0; i < r->nmem;) {
        int32_t rank = r->mem[i].rank;
        while (r->ranks[k].rank < rank)
            k++;
        fprintf(out,
                "<path class=\"mem\" data-rank=\"%d\" fill=\"none\" "
                "stroke=\"%s\" stroke-width=\"1.6\" "
                "stroke-linejoin=\"round\" d=\"",
                (int)rank, rank_colors[rank % NRANK_COLORS]);
        for (int first = 1; i < r->nmem && r->mem[i].rank == rank; i++) {
            /* of several changes at one instant (a backward frees as the
             * next forward allocates) only the last is a state */
            if (i + 1 < r->nmem && r->mem[i + 1].rank == rank &&
                r->mem[i + 1].t == r->mem[i].t)
                continue;
            fprintf(out, first ? "M%.2f %.2f" : "H%.2fV%.2f",
                    xs(c, r->mem[i].t),
                    bottom - r->mem[i].bytes / c->ymax * MH);
            first = 0;
        }
        fprintf(out, "H%.2f\"><title>%s memory</title></path>\n",
                xs(c, r->makespan), r->ranks[k].label);
    }
    fputs("</g>\n", out);
}

static void svg_block(svg_ctx *c, const export_run *r, int y)
{
    FILE *out = c->out;
    fprintf(out, "<g class=\"run\" data-run=\"%lld\">\n", (long long)r->id);
    svg_title(c, r, y);
    int y_rows = y + title_height(r);
    int y_axis = y_rows + r->nranks * PITCH - 4;
    fprintf(out,
            "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"%s\">"
            "bubble</text>\n",
            ML + PW + 10, y_rows - 4, ink2);
    for (int32_t i = 0; i < r->nranks; i++) {
        double ry = y_rows + i * PITCH;
        char fit[96];
        fprintf(out,
                "<rect class=\"idle\" x=\"%d\" y=\"%.1f\" width=\"%.2f\" "
                "height=\"%d\" fill=\"%s\"/>\n"
                "<text class=\"row\" x=\"%d\" y=\"%.1f\" "
                "text-anchor=\"end\" fill=\"%s\"%s>%s</text>\n",
                ML, ry, xs(c, r->makespan) - ML, RH, idle_fill, ML - 8,
                ry + RH / 2.0 + 4, ink,
                fit_label(r->ranks[i].label, fit, sizeof fit),
                r->ranks[i].label);
        char bub[16] = "-";
        if (!isnan(r->ranks[i].bubble))
            snprintf(bub, sizeof bub, "%.1f%%", 100 * r->ranks[i].bubble);
        fprintf(out,
                "<text class=\"bubble\" x=\"%d\" y=\"%.1f\" font-size=\"11\" "
                "fill=\"%s\">%s</text>\n",
                ML + PW + 10, ry + RH / 2.0 + 4, ink, bub);
    }
    svg_axis(c, y_rows - 2, y_axis);
    /* rows are in rank order and events are ordered by rank: one pass */
    int32_t e = 0;
    for (int32_t i = 0; i < r->nranks; i++) {
        int32_t rank = r->ranks[i].rank;
        double ry = y_rows + i * PITCH;
        while (e < r->nev && r->ev[e].rank < rank)
            e++;
        for (; e < r->nev && r->ev[e].rank == rank; e++)
            svg_op(c, r, &r->ev[e], ry);
        for (int32_t t = 0; t < r->ntr; t++) {
            if (r->tr[t].src == rank)
                svg_transfer(c, r, &r->tr[t], 0, ry + RH + 2);
            if (r->tr[t].dst == rank)
                svg_transfer(c, r, &r->tr[t], 1, ry + RH + 2);
        }
    }
    /* where this run ends, when the scale belongs to a longer one */
    if (r->makespan < c->tmax * (1 - 1e-9))
        fprintf(out,
                "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                "stroke=\"%s\" stroke-dasharray=\"3 3\"/>\n",
                xs(c, r->makespan), y_rows - 2, xs(c, r->makespan), y_axis,
                ink2);
    if (r->nmem > 0)
        svg_memory(c, r, y_axis + AXIS_H - 6);
    fputs("</g>\n", out);
}

int export_svg(rec_db *db, const int64_t *runs, int nruns, const out_view *view,
               FILE *out, ps_err *err)
{
    if (nruns < 1)
        return ps_errf(err, "export: no run to draw");
    export_run *r = calloc((size_t)nruns, sizeof *r);
    if (!r)
        return ps_errf(err, "export: out of memory");
    int rc = PS_OK, loaded = 0;
    for (; loaded < nruns; loaded++)
        if ((rc = export_run_load(db, runs[loaded], view, &r[loaded], err)))
            break;
    if (rc == PS_OK) {
        svg_ctx c = {out, 0, 0, 0};
        int height = LEGEND_H + 8;
        for (int k = 0; k < nruns; k++) {
            c.tmax = fmax(c.tmax, r[k].makespan);
            for (int32_t i = 0; i < r[k].nmem; i++)
                c.ymax = fmax(c.ymax, r[k].mem[i].bytes);
            c.ymax = fmax(c.ymax, r[k].capacity);
            height += block_height(&r[k]);
        }
        if (view && view->windowed) { /* the window's scale */
            c.t0 = view->t0;
            c.tmax = fmin(c.tmax, view->t1);
            if (!(c.tmax > c.t0))
                c.tmax = view->t1;
        }
        if (!(c.tmax > c.t0))
            c.tmax = c.t0 + 1;
        if (!(c.ymax > 0))
            c.ymax = 1;
        svg_begin(out, SVG_W, height, "font-family=\"sans-serif\"");
        fprintf(out,
                "<!-- pipesim export: rect.op per compute event "
                "(data-run, data-rank), rect.comm per transfer end -->\n"
                "<rect class=\"background\" width=\"100%%\" height=\"100%%\" "
                "fill=\"#fff\"/>\n");
        svg_legend(&c, r, nruns);
        int y = LEGEND_H;
        for (int k = 0; k < nruns; k++) {
            svg_block(&c, &r[k], y);
            y += block_height(&r[k]);
        }
        fputs("</svg>\n", out);
        if (ferror(out))
            rc = ps_errf(err, "export: write error");
    }
    for (int k = 0; k < loaded; k++)
        export_run_free(&r[k]);
    free(r);
    return rc;
}
