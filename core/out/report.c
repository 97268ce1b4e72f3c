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

int report_run(rec_db *db, int64_t run, FILE *out, int width, ps_err *err)
{
    return report_run_view(db, run, NULL, out, width, err);
}

int report_run_view(rec_db *db, int64_t run, const out_view *view, FILE *out,
                    int width, ps_err *err)
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
                     "(SELECT max(t_end) FROM event WHERE run = ?1)",
                     run, err);
    if (!q || rec_query_step(q, err) != 1) {
        rec_query_free(q);
        return PS_ERR;
    }
    int64_t events = rec_query_int(q, 0), memory = rec_query_int(q, 1);
    double t_end = rec_query_double(q, 2);
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
    return report_gantt(db, run, view, width, makespan, out, err);
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
