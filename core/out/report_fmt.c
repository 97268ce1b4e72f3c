/* The text reports' shared helpers (out/report_impl.h): times, bytes and
 * percentages formatted for a terminal, a prepared query on a run, and
 * wrapping at ", ". Below report.c, report_runs.c and report_eff.c, which
 * all call them. */
#include "out/report_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double report_time_unit(double s, const char **name)
{
    double a = fabs(s);
    if (a >= 1 || a == 0) {
        *name = "s";
        return 1;
    }
    if (a >= 1e-3) {
        *name = "ms";
        return 1e-3;
    }
    if (a >= 1e-6) {
        *name = "us";
        return 1e-6;
    }
    *name = "ns";
    return 1e-9;
}

const char *report_fmt_time(double s, char *buf, size_t size)
{
    const char *unit;
    double scale = report_time_unit(s, &unit);
    snprintf(buf, size, "%.4g %s", s / scale, unit);
    return buf;
}

const char *report_fmt_bytes(double b, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (fabs(b) >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%.2f %s" : "%.0f %s", b, units[u]);
    return buf;
}

const char *report_fmt_pct(double f, char *buf, size_t size)
{
    snprintf(buf, size, "%.2f%%", 100 * f);
    return buf;
}

/* Prepares sql with ?1 bound to run (when run >= 0). */
rec_query *report_query(rec_db *db, const char *sql, int64_t run, ps_err *err)
{
    rec_query *q = rec_query_new(db, sql, err);
    if (q && run >= 0)
        rec_query_bind_int(q, 1, run);
    return q;
}

/* Writes text to out, breaking lines after ", " so that none is longer
 * than width where possible; continuation lines are indented. */
void report_wrap(FILE *out, const char *text, int width)
{
    int col = 0;
    while (*text) {
        const char *sep = strstr(text, ", ");
        int len = sep ? (int)(sep - text) + 1 : (int)strlen(text);
        if (col > 2 && col + 1 + len > width) {
            fputs("\n  ", out);
            col = 2;
        } else if (col > 0) {
            fputc(' ', out);
            col++;
        }
        fwrite(text, 1, (size_t)len, out);
        col += len;
        text += len + (sep ? 1 : 0);
    }
    fputc('\n', out);
}
