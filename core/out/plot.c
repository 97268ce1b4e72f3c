/* `pipesim plot`: the command line, the query and the CSV form. A name
 * given to --x, --y, --by or --dashed is a run column, else a sweep
 * coordinate of run.point (json_extract), else a tag of run.tags; anything
 * else is an SQL expression over run (and rank_stat, whose columns need an
 * aggregate over the ranks). One value per group and x, or --agg. */
#include "out/plot.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "out/report.h"
#include "rec/rec.h"

static const char usage_line[] =
    "usage: pipesim plot DB --x COLUMN --y COLUMN [--by COLUMN] [--where SQL] "
    "[-o FILE]";

#define MAX_COLS 128 /* columns of one table */

typedef struct plot_opts {
    const char *db, *x, *y, *by, *where, *dashed, *dashed_label, *agg;
    const char *title, *xlabel, *ylabel, *format, *out, *log, *xunit, *yunit;
    out_view view;         /* --ranks, --replica (out/plot_view.c) */
    const char *view_flag; /* the first of them given */
} plot_opts;

/* A table's column names, read once. */
typedef struct colset {
    char *names[MAX_COLS];
    int n;
} colset;

/* One resolved option: the SQL it stands for and the column name its unit
 * is inferred from ("" when none). */
typedef struct term {
    const char *opt, *text; /* "--y", as typed */
    char *sql;
    char unit_name[64];
} term;

typedef struct ctx {
    rec_db *db;
    colset run_cols, rank_cols;
    int has_point, has_tags;
    ps_err err;
} ctx;

static char *dup_printf(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static char *dup_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* ------------------------------------------------------------------ */
/* arguments                                                           */
/* ------------------------------------------------------------------ */

static int parse_args(int argc, char **argv, plot_opts *o)
{
    struct {
        const char *name;
        const char **slot;
    } opts[] = {
        {"--x", &o->x},           {"--y", &o->y},
        {"--by", &o->by},         {"--where", &o->where},
        {"--dashed", &o->dashed}, {"--dashed-label", &o->dashed_label},
        {"--agg", &o->agg},       {"--title", &o->title},
        {"--xlabel", &o->xlabel}, {"--ylabel", &o->ylabel},
        {"--format", &o->format}, {"-o", &o->out},
        {"--log", &o->log},       {"--xunit", &o->xunit},
        {"--yunit", &o->yunit},
    };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            if (o->db)
                return ps_fail("plot: unexpected argument '%s' (%s)", a,
                               usage_line);
            o->db = a;
            continue;
        }
        int viewed = plot_view_arg(&o->view, &o->view_flag, argc, argv, &i);
        if (viewed < 0)
            return 1;
        if (viewed)
            continue;
        size_t k, nopts = sizeof opts / sizeof opts[0];
        const char *value = NULL;
        for (k = 0; k < nopts; k++) {
            size_t n = strlen(opts[k].name);
            if (strncmp(a, opts[k].name, n) != 0)
                continue;
            if (a[n] == '=') {
                value = a + n + 1;
                break;
            }
            if (a[n] == '\0') {
                if (i + 1 >= argc)
                    return ps_fail("plot: %s needs a value (%s)", a,
                                   usage_line);
                value = argv[++i];
                break;
            }
        }
        if (k == nopts)
            return ps_fail("plot: unknown option '%s' (%s)", a, usage_line);
        if (!*value)
            return ps_fail("plot: %s: the value is empty", opts[k].name);
        *opts[k].slot = value;
    }
    if (!o->db)
        return ps_fail("plot: no database given (%s)", usage_line);
    if (!o->x)
        return ps_fail("plot: --x is missing: the run column or sweep "
                       "coordinate along the x axis, such as --x microbatches");
    if (!o->y)
        return ps_fail("plot: --y is missing: the run column or expression to "
                       "plot, such as --y makespan");
    if (o->format && strcmp(o->format, "svg") != 0 &&
        strcmp(o->format, "csv") != 0)
        return ps_fail("plot: --format %s: expected svg or csv", o->format);
    if (o->agg && strcmp(o->agg, "min") != 0 && strcmp(o->agg, "max") != 0 &&
        strcmp(o->agg, "mean") != 0)
        return ps_fail("plot: --agg %s: expected min, max or mean", o->agg);
    if (o->log && strcmp(o->log, "x") != 0 && strcmp(o->log, "y") != 0 &&
        strcmp(o->log, "xy") != 0)
        return ps_fail("plot: --log %s: expected x, y or xy", o->log);
    const char *units[2] = {o->xunit, o->yunit};
    for (int i = 0; i < 2; i++)
        if (units[i] && plot_unit_parse(units[i]) < 0)
            return ps_fail(
                "plot: --%cunit %s: expected s, bytes, B/s, fraction "
                "or none",
                i ? 'y' : 'x', units[i]);
    return 0;
}

/* ------------------------------------------------------------------ */
/* resolving names                                                     */
/* ------------------------------------------------------------------ */

static int ident_char(char ch, int first)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
           (!first && ch >= '0' && ch <= '9');
}

static int is_ident(const char *s)
{
    if (!ident_char(*s, 1))
        return 0;
    while (ident_char(*s, 0))
        s++;
    return *s == '\0';
}

static int has_col(const colset *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->names[i], name) == 0)
            return 1;
    return 0;
}

static int read_cols(ctx *c, const char *table, colset *out)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT name FROM pragma_table_info('%s')",
             table);
    rec_query *q = rec_query_new(c->db, sql, &c->err);
    if (!q)
        return PS_ERR;
    int rc;
    while ((rc = rec_query_step(q, &c->err)) == 1 && out->n < MAX_COLS) {
        out->names[out->n] = dup_printf("%s", rec_query_text(q, 0));
        if (!out->names[out->n]) {
            rec_query_free(q);
            return ps_errf(&c->err, "out of memory");
        }
        out->n++;
    }
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

static void free_cols(colset *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->names[i]);
}

/* 1 when some run's JSON column (point or tags) has key name. */
static int json_has(ctx *c, const char *column, const char *name, int *found)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT 1 FROM run WHERE json_valid(%s) AND "
             "json_extract(%s, '$.%s') IS NOT NULL LIMIT 1",
             column, column, name);
    rec_query *q = rec_query_new(c->db, sql, &c->err);
    if (!q)
        return PS_ERR;
    int rc = rec_query_step(q, &c->err);
    rec_query_free(q);
    *found = rc == 1;
    return rc < 0 ? PS_ERR : PS_OK;
}

/* "a, b, c": the keys of every run's point, for the message naming an
 * unknown coordinate. */
static void point_keys(ctx *c, char *buf, size_t size)
{
    buf[0] = '\0';
    if (!c->has_point)
        return;
    rec_query *q = rec_query_new(c->db,
                                 "SELECT DISTINCT j.key FROM run, "
                                 "json_each(run.point) j WHERE "
                                 "json_valid(run.point) ORDER BY 1 LIMIT 40",
                                 NULL);
    size_t len = 0;
    while (q && rec_query_step(q, NULL) == 1 && len + 2 < size) {
        int n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
                         rec_query_text(q, 0));
        if (n < 0 || (size_t)n >= size - len)
            break;
        len += (size_t)n;
    }
    rec_query_free(q);
}

/* The last identifier of an expression that is not a function name or a
 * table name: "max(rank_stat.peak_memory)" -> "peak_memory". Quoted
 * strings are skipped. */
static void last_column(const char *s, char *out, size_t size)
{
    out[0] = '\0';
    for (const char *p = s; *p;) {
        if (*p == '\'') {
            p = strchr(p + 1, '\'');
            p = p ? p + 1 : s + strlen(s);
            continue;
        }
        if (!ident_char(*p, 1)) {
            p += ident_char(*p, 0) ? strspn(p, "0123456789") : 1;
            continue;
        }
        const char *b = p;
        while (ident_char(*p, 0))
            p++;
        size_t n = (size_t)(p - b);
        if (*p == '(' || *p == '.' || n >= size)
            continue;
        memcpy(out, b, n);
        out[n] = '\0';
    }
}

static int resolve(ctx *c, term *t)
{
    const char *s = t->text;
    if (is_ident(s)) {
        snprintf(t->unit_name, sizeof t->unit_name, "%s", s);
        if (has_col(&c->run_cols, s)) {
            t->sql = dup_printf("run.\"%s\"", s);
            return t->sql ? PS_OK : ps_errf(&c->err, "out of memory");
        }
        int found = 0;
        const char *json[2] = {c->has_point ? "point" : NULL,
                               c->has_tags ? "tags" : NULL};
        for (int i = 0; i < 2; i++) {
            if (!json[i])
                continue;
            if (json_has(c, json[i], s, &found))
                return PS_ERR;
            if (found) {
                t->sql = dup_printf("json_extract(run.%s, '$.%s')", json[i], s);
                return t->sql ? PS_OK : ps_errf(&c->err, "out of memory");
            }
        }
        if (has_col(&c->rank_cols, s))
            return ps_errf(&c->err,
                           "%s %s: a per-rank column; plot an aggregate over "
                           "the ranks, such as max(rank_stat.%s) or "
                           "avg(rank_stat.%s)",
                           t->opt, s, s, s);
        char keys[512];
        point_keys(c, keys, sizeof keys);
        return ps_errf(&c->err,
                       "%s %s: no run column or sweep coordinate of that "
                       "name in %s (%s%s%s)",
                       t->opt, s, rec_path(c->db),
                       *keys ? "sweep coordinates: "
                             : "run columns such as "
                               "makespan, bubble, "
                               "microbatches, stages, "
                               "schedule",
                       keys, *keys ? "; or an SQL expression over run" : "");
    }
    if (strncmp(s, "rank_stat.", 10) == 0 && is_ident(s + 10))
        return ps_errf(&c->err,
                       "%s %s: one value per rank; plot an aggregate over the "
                       "ranks, such as max(%s) or avg(%s)",
                       t->opt, s, s, s);
    last_column(s, t->unit_name, sizeof t->unit_name);
    t->sql = dup_printf("(%s)", s);
    return t->sql ? PS_OK : ps_errf(&c->err, "out of memory");
}

/* Prepares one option's SQL alone, so that a mistake is reported against
 * the option that made it. */
static int check_term(ctx *c, const term *t, const char *from, int is_where)
{
    char *sql =
        is_where ? dup_printf("SELECT 1 FROM %s WHERE %s LIMIT 0", from, t->sql)
                 : dup_printf("SELECT %s FROM %s LIMIT 0", t->sql, from);
    if (!sql)
        return ps_errf(&c->err, "out of memory");
    ps_err e;
    rec_query *q = rec_query_new(c->db, sql, &e);
    free(sql);
    if (!q)
        return ps_errf(&c->err, "%s %s: %s", t->opt, t->text, e.msg);
    rec_query_free(q);
    return PS_OK;
}

/* ------------------------------------------------------------------ */
/* the data                                                            */
/* ------------------------------------------------------------------ */

typedef struct series_buf {
    plot_series *s;
    int n;
    size_t cap;
    /* a categorical --x (issue 27 item 15: "1f1b" is a category, not a
     * number to refuse): the label of each position, in the order of the
     * runs that first have it; NULL for a numeric axis */
    char **cats;
    int ncats;
    size_t cats_cap;
} series_buf;

/* Position i's label of a categorical axis (the array grows as i does:
 * positions come in any order across the groups). */
static int set_cat(series_buf *b, int i, const char *label)
{
    if (VEC_RESERVE(b->cats, b->cats_cap, (size_t)i + 1)) /* new ones NULL */
        return -1;
    if (i >= b->ncats)
        b->ncats = i + 1;
    if (!b->cats[i] && !(b->cats[i] = dup_printf("%s", label)))
        return -1;
    return 0;
}

static int push_point(plot_series *p, double x, double y, double d)
{
    size_t need = (size_t)p->n + 1, cap_y = p->cap, cap_d = p->cap;
    if (VEC_RESERVE(p->y, cap_y, need) || VEC_RESERVE(p->dashed, cap_d, need) ||
        VEC_RESERVE(p->x, p->cap, need)) /* the three alike */
        return PS_ERR;
    p->x[p->n] = x;
    p->y[p->n] = y;
    p->dashed[p->n] = d;
    p->n++;
    return PS_OK;
}

static plot_series *new_series(series_buf *b, const char *label)
{
    if (VEC_RESERVE(b->s, b->cap, (size_t)b->n + 1))
        return NULL;
    plot_series *p = &b->s[b->n];
    memset(p, 0, sizeof *p);
    p->label = dup_printf("%s", label);
    if (!p->label)
        return NULL;
    b->n++;
    return p;
}

static void free_series(series_buf *b)
{
    for (int i = 0; i < b->n; i++) {
        free(b->s[i].label);
        free(b->s[i].x);
        free(b->s[i].y);
        free(b->s[i].dashed);
    }
    free(b->s);
    for (int i = 0; i < b->ncats; i++)
        free(b->cats[i]);
    free(b->cats);
}

static int is_number(const char *type)
{
    return strcmp(type, "integer") == 0 || strcmp(type, "real") == 0;
}

/* The query: one row per (series, x) with its runs aggregated (n, y, d,
 * how many lack y or d), categories numbered where the runs first have
 * them, in the order the runs first have each series. NULL when out of
 * memory. */
static char *plot_sql(const plot_opts *o, const term *t, const char *from,
                      int join)
{
    const char *agg = !o->agg                       ? "min"
                      : strcmp(o->agg, "mean") == 0 ? "avg"
                                                    : o->agg;
    return dup_printf(
        "WITH r AS (SELECT run.id AS rid, %s AS g, %s AS x, %s AS y, %s AS d "
        "FROM %s WHERE run.status = 'ok' AND (%s)%s), "
        "c AS (SELECT g, x, count(*) AS n, %s(y) AS y, %s(d) AS d, "
        "min(rid) AS first, sum(y IS NULL) AS ynull, sum(d IS NULL) AS dnull "
        "FROM r GROUP BY g, x), "
        /* categories: x is one when any value is text; a category's place
         * is where the runs first have it */
        "k AS (SELECT *, min(first) OVER (PARTITION BY x) AS xfirst, "
        "max(typeof(x) = 'text') OVER () AS cat FROM c) "
        "SELECT g, x, typeof(x), n, y, typeof(y), d, typeof(d), ynull, dnull, "
        "cat, dense_rank() OVER (PARTITION BY x IS NULL ORDER BY xfirst) - 1 "
        "FROM k ORDER BY min(first) OVER (PARTITION BY g), g, CASE WHEN cat "
        "THEN xfirst ELSE x END",
        t[2].sql ? t[2].sql : "NULL", t[0].sql, t[1].sql,
        t[3].sql ? t[3].sql : "NULL", from, t[4].sql ? t[4].sql : "1",
        join ? " GROUP BY run.id" : "", agg, agg);
}

/* What load keeps from row to row. */
typedef struct loader {
    ctx *c;
    const plot_opts *o;
    series_buf *b;
    plot_series *cur; /* the series being filled, named last */
    char last[1024];
    long *no_x, *no_y, *no_d;
} loader;

/* Several runs at one point need --agg to say how they combine; without
 * it the plot refuses rather than pick one. */
static int one_run_per_point(loader *l, long n, const char *g, rec_query *q)
{
    const plot_opts *o = l->o;
    if (n > 1 && !o->agg && o->by)
        return ps_errf(&l->c->err,
                       "%ld runs have %s = %s, %s = %s: choose one with "
                       "--where, add a coordinate to --by, or combine "
                       "them with --agg min|max|mean",
                       n, o->by, g, o->x, rec_query_text(q, 1));
    if (n > 1 && !o->agg)
        return ps_errf(&l->c->err,
                       "%ld runs have %s = %s: choose one with --where, "
                       "group them with --by, or combine them with "
                       "--agg min|max|mean",
                       n, o->x, rec_query_text(q, 1));
    return PS_OK;
}

/* One row of plot_sql's result: a point of its series (a new series when
 * the name changes), or counted as left out when x or y is missing. */
static int load_row(loader *l, rec_query *q)
{
    const plot_opts *o = l->o;
    ctx *c = l->c;
    const char *g = rec_query_isnull(q, 0) ? "(none)" : rec_query_text(q, 0);
    if (!o->by)
        g = o->ylabel ? o->ylabel : o->y;
    long n = (long)rec_query_int(q, 3);
    if (strcmp(rec_query_text(q, 2), "null") == 0) {
        *l->no_x += n;
        return PS_OK;
    }
    double x = rec_query_double(q, 1);
    if (rec_query_int(q, 10)) { /* categories */
        x = (double)rec_query_int(q, 11);
        if (set_cat(l->b, (int)x, rec_query_text(q, 1)))
            return ps_errf(&c->err, "out of memory");
    }
    if (one_run_per_point(l, n, g, q))
        return PS_ERR;
    *l->no_y += (long)rec_query_int(q, 8);
    *l->no_d += o->dashed ? (long)rec_query_int(q, 9) : 0;
    const char *yt = rec_query_text(q, 5);
    if (strcmp(yt, "null") == 0)
        return PS_OK;
    if (!is_number(yt))
        return ps_errf(&c->err, "--y %s: the value '%s' is not a number", o->y,
                       rec_query_text(q, 4));
    const char *dt = rec_query_text(q, 7);
    if (o->dashed && strcmp(dt, "null") != 0 && !is_number(dt))
        return ps_errf(&c->err, "--dashed %s: the value '%s' is not a number",
                       o->dashed, rec_query_text(q, 6));
    double d = strcmp(dt, "null") == 0 ? NAN : rec_query_double(q, 6);
    if (!l->cur || strcmp(l->last, g) != 0) {
        snprintf(l->last, sizeof l->last, "%s", g);
        l->cur = new_series(l->b, g);
        if (!l->cur)
            return ps_errf(&c->err, "out of memory");
    }
    if (push_point(l->cur, x, rec_query_double(q, 4), d))
        return ps_errf(&c->err, "out of memory");
    return PS_OK;
}

/* Runs the query and fills b; counts the runs left out for the warnings. */
static int load(ctx *c, const plot_opts *o, term *t, int nterms, series_buf *b,
                long *no_x, long *no_y, long *no_d)
{
    /* t: x, y, by, dashed, where (the last three may have sql NULL) */
    int join = 0;
    for (int i = 0; i < nterms; i++)
        join |= t[i].sql && strstr(t[i].sql, "rank_stat") != NULL;
    char *from = plot_view_from(&o->view, o->view_flag, join, &c->err);
    if (!from)
        return PS_ERR;
    for (int i = 0; i < nterms; i++)
        if (t[i].sql && check_term(c, &t[i], from, i == 4)) {
            free(from);
            return PS_ERR;
        }
    char *sql = plot_sql(o, t, from, join);
    free(from);
    if (!sql)
        return ps_errf(&c->err, "out of memory");
    rec_query *q = rec_query_new(c->db, sql, &c->err);
    free(sql);
    if (!q)
        return PS_ERR;
    int rc;
    loader l = {
        .c = c, .o = o, .b = b, .no_x = no_x, .no_y = no_y, .no_d = no_d};
    long rows = 0;
    while ((rc = rec_query_step(q, &c->err)) == 1) {
        rows++;
        if (load_row(&l, q)) {
            rc = PS_ERR;
            break;
        }
    }
    rec_query_free(q);
    if (rc < 0)
        return PS_ERR;
    if (rows == 0) {
        int64_t total = 0;
        rec_run_count(c->db, &total, NULL);
        return ps_errf(&c->err,
                       "%s: no runs to plot (%lld run%s in all; a plot takes "
                       "those with status 'ok'%s)",
                       rec_path(c->db), (long long)total, total == 1 ? "" : "s",
                       o->where ? " that match --where" : "");
    }
    if (b->n == 0)
        return ps_errf(&c->err,
                       "%s: no run has both a --x %s and a --y %s "
                       "value",
                       rec_path(c->db), o->x, o->y);
    return PS_OK;
}

/* Every value on a log axis must be positive. */
static int check_log(ctx *c, const plot_opts *o, const series_buf *b, int logx,
                     int logy)
{
    if (logx && b->cats)
        return ps_errf(&c->err,
                       "--log x: --x %s holds categories ('%s', ...), which "
                       "have no scale",
                       o->x, b->cats[0]);
    for (int s = 0; s < b->n; s++)
        for (int i = 0; i < b->s[s].n; i++) {
            const plot_series *p = &b->s[s];
            if (logx && !(p->x[i] > 0))
                return ps_errf(&c->err,
                               "--log x: %s = %g (%s) cannot be on a log "
                               "axis",
                               o->x, p->x[i], p->label);
            if (logy && !(p->y[i] > 0))
                return ps_errf(&c->err,
                               "--log y: %s = %g (%s at %s = %g) cannot be on "
                               "a log axis",
                               o->y, p->y[i], p->label, o->x, p->x[i]);
            if (logy && !isnan(p->dashed[i]) && !(p->dashed[i] > 0))
                return ps_errf(&c->err,
                               "--log y: %s = %g (%s at %s = %g) cannot be on "
                               "a log axis",
                               o->dashed, p->dashed[i], p->label, o->x,
                               p->x[i]);
        }
    return PS_OK;
}

/* ------------------------------------------------------------------ */
/* output                                                              */
/* ------------------------------------------------------------------ */

static void write_csv(FILE *out, const plot_opts *o, const series_buf *b)
{
    report_csv_field(out, o->by ? o->by : "series");
    fputc(',', out);
    report_csv_field(out, o->x);
    fputc(',', out);
    report_csv_field(out, o->y);
    if (o->dashed) {
        fputc(',', out);
        report_csv_field(out, o->dashed);
    }
    fputc('\n', out);
    for (int s = 0; s < b->n; s++)
        for (int i = 0; i < b->s[s].n; i++) {
            report_csv_field(out, b->s[s].label);
            if (b->cats) {
                fputc(',', out);
                report_csv_field(out, b->cats[(int)b->s[s].x[i]]);
                fprintf(out, ",%.17g", b->s[s].y[i]);
            } else {
                fprintf(out, ",%.17g,%.17g", b->s[s].x[i], b->s[s].y[i]);
            }
            if (o->dashed) {
                if (isnan(b->s[s].dashed[i]))
                    fputc(',', out);
                else
                    fprintf(out, ",%.17g", b->s[s].dashed[i]);
            }
            fputc('\n', out);
        }
}

static const char *ext_format(const char *path)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    return dot && strcmp(dot, ".csv") == 0 ? "csv" : "svg";
}

static enum plot_unit unit_for(const char *given, const char *column)
{
    return given ? (enum plot_unit)plot_unit_parse(given)
                 : plot_unit_of(column);
}

/* The chart as SVG into mem: its title (given, or "y against x, by
 * by"), its labels and units, and the dashed companions only when
 * --dashed asked for them. */
static int draw_chart(ctx *c, const plot_opts *o, const term *t, series_buf *b,
                      int logx, int logy, FILE *mem)
{
    char title[512];
    if (o->title)
        snprintf(title, sizeof title, "%s", o->title);
    else
        snprintf(title, sizeof title, "%s against %s%s%s",
                 o->ylabel ? o->ylabel : o->y, o->xlabel ? o->xlabel : o->x,
                 o->by ? ", by " : "", o->by ? o->by : "");
    plot_chart chart = {
        .title = title,
        .xlabel = o->xlabel ? o->xlabel : o->x,
        .ylabel = o->ylabel ? o->ylabel : o->y,
        .legend_title = o->by,
        .dashed_label =
            o->dashed ? (o->dashed_label ? o->dashed_label : o->dashed) : NULL,
        .xunit = unit_for(o->xunit, t[0].unit_name),
        .yunit = unit_for(o->yunit, t[1].unit_name),
        .logx = logx,
        .logy = logy,
        .series = b->s,
        .nseries = b->n,
        .xcats = (const char *const *)b->cats,
        .nxcats = b->ncats,
    };
    if (!o->dashed)
        for (int s = 0; s < b->n; s++) {
            free(b->s[s].dashed);
            b->s[s].dashed = NULL;
        }
    return plot_svg(&chart, mem, &c->err);
}

/* The runs left out, one warning line per reason; after the output, so a
 * shell pipeline still gets its data first. */
static void warn_left_out(const plot_opts *o, long no_x, long no_y, long no_d)
{
    char msg[512];
    if (no_x) {
        snprintf(msg, sizeof msg,
                 "warning: plot: %ld run%s without a --x %s value left out",
                 no_x, no_x == 1 ? "" : "s", o->x);
        ps_print_error(msg);
    }
    if (no_y) {
        snprintf(msg, sizeof msg,
                 "warning: plot: %ld run%s without a --y %s value left out",
                 no_y, no_y == 1 ? "" : "s", o->y);
        ps_print_error(msg);
    }
    if (no_d) {
        snprintf(msg, sizeof msg,
                 "warning: plot: %ld run%s without a --dashed %s value (no "
                 "dashed line there)",
                 no_d, no_d == 1 ? "" : "s", o->dashed);
        ps_print_error(msg);
    }
}

int plot_main(int argc, char **argv)
{
    plot_opts o = {0};
    view_init(&o.view);
    ctx c = {0};
    if (parse_args(argc, argv, &o) || (!(c.db = rec_open_read(o.db, &c.err)) &&
                                       ps_fail("plot: %s", c.err.msg))) {
        view_free(&o.view);
        return 1;
    }
    term t[5] = {
        {"--x", o.x, NULL, ""},         {"--y", o.y, NULL, ""},
        {"--by", o.by, NULL, ""},       {"--dashed", o.dashed, NULL, ""},
        {"--where", o.where, NULL, ""},
    };
    series_buf b = {0};
    long no_x = 0, no_y = 0, no_d = 0;
    char *data = NULL;
    size_t size = 0;
    int rc = read_cols(&c, "run", &c.run_cols) ||
             read_cols(&c, "rank_stat", &c.rank_cols);
    c.has_point = has_col(&c.run_cols, "point");
    c.has_tags = has_col(&c.run_cols, "tags");
    for (int i = 0; i < 4 && !rc; i++)
        if (t[i].text)
            rc = resolve(&c, &t[i]);
    if (!rc && o.where) {
        t[4].sql = dup_printf("%s", o.where);
        rc = t[4].sql ? PS_OK : ps_errf(&c.err, "out of memory");
    }
    if (!rc)
        rc = load(&c, &o, t, 5, &b, &no_x, &no_y, &no_d);
    int logx = o.log && strchr(o.log, 'x'), logy = o.log && strchr(o.log, 'y');
    if (!rc)
        rc = check_log(&c, &o, &b, logx, logy);
    const char *format = o.format ? o.format : ext_format(o.out);
    FILE *mem = NULL;
    if (!rc) {
        mem = open_memstream(&data, &size);
        if (!mem)
            rc = ps_errf(&c.err, "out of memory");
    }
    if (!rc && strcmp(format, "csv") == 0)
        write_csv(mem, &o, &b);
    else if (!rc)
        rc = draw_chart(&c, &o, t, &b, logx, logy, mem);
    if (mem && fclose(mem) != 0 && !rc)
        rc = ps_errf(&c.err, "out of memory");
    for (int i = 0; i < 5; i++)
        free(t[i].sql);
    free_series(&b);
    free_cols(&c.run_cols);
    free_cols(&c.rank_cols);
    view_free(&o.view);
    rec_close(c.db, NULL);
    if (rc) {
        free(data);
        return ps_fail("plot: %s", c.err.msg);
    }
    rc = plot_write_out(o.out, data, size);
    free(data);
    if (!rc)
        warn_left_out(&o, no_x, no_y, no_d);
    return rc;
}
