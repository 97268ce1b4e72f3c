/* The run table of `pipesim report` and ps.show(): one line per run,
 * aligned in human units or CSV in base units, with the training step's
 * efficiency figures (issue 27 item 16) beside the schedule's. */
#include "out/report.h"

#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "base/vec.h"
#include "out/report_impl.h"

/* The last three columns are the step's efficiency (rec/rec.h): model
 * TFLOP/s per GPU, MFU and tokens per second per GPU, appended after
 * status so that the CSV's earlier columns keep their places. */
enum { NCOLS = 18, CELL = 48, COL_FITS = 12, COL_TFLOPS = 15, COL_MFU = 16 };

static const char *const col_name[NCOLS] = {
    "id",   "name",      "kind",     "schedule",   "p",      "m",
    "v",    "dp",        "makespan", "bubble",     "closed", "peak_mem",
    "fits", "imbalance", "status",   "tflops/gpu", "mfu",    "tok/s/gpu"};
static const char *const csv_name[NCOLS] = {"id",
                                            "name",
                                            "kind",
                                            "schedule",
                                            "stages",
                                            "microbatches",
                                            "virtual_stages",
                                            "dp",
                                            "makespan",
                                            "bubble",
                                            "closed_form_bubble",
                                            "peak_memory",
                                            "fits",
                                            "imbalance",
                                            "status",
                                            "model_tflops_per_gpu",
                                            "mfu",
                                            "tokens_per_s_per_gpu"};
/* text columns are left-aligned, numbers right-aligned */
static const int col_left[NCOLS] = {0, 1, 1, 1, 0, 0, 0, 0, 0,
                                    0, 0, 0, 1, 0, 1, 0, 0, 0};

static const char runs_sql[] =
    "SELECT id, name, kind, schedule, stages, microbatches, virtual_stages, "
    "dp, makespan, bubble, closed_form_bubble, coalesce(peak_memory, (SELECT "
    "max(peak) FROM memory_peak WHERE memory_peak.run = run.id)), "
    "fits, imbalance, status, model_tflops_per_gpu, mfu, "
    "tokens_per_s_per_gpu FROM run ORDER BY id";

void report_csv_field(FILE *out, const char *s)
{
    int quote = strpbrk(s, ",\"\n\r") != NULL;
    if (!quote && utf8_valid(s)) {
        fputs(s, out);
        return;
    }
    if (quote)
        fputc('"', out);
    while (*s) {
        int n = utf8_len(s);
        if (!n) { /* not UTF-8: U+FFFD, as every text pipesim writes */
            fputs(UTF8_REPLACEMENT, out);
            s++;
            continue;
        }
        if (*s == '"')
            fputc('"', out);
        fwrite(s, 1, (size_t)n, out);
        s += n;
    }
    if (quote)
        fputc('"', out);
}

/* One row as display cells (human units) or CSV fields (raw numbers). */
static void run_cells(rec_query *q, int csv, char cell[NCOLS][CELL])
{
    for (int c = 0; c < NCOLS; c++) {
        char *b = cell[c];
        if (rec_query_isnull(q, c)) {
            snprintf(b, CELL, "%s", csv ? "" : "-");
            continue;
        }
        double x = rec_query_double(q, c);
        switch (c) {
        case 0:
        case 4:
        case 5:
        case 6:
        case 7:
            snprintf(b, CELL, "%lld", (long long)rec_query_int(q, c));
            break;
        case COL_FITS: /* 1/0 in CSV, yes/NO on screen; NULL: unknown */
            if (csv)
                snprintf(b, CELL, "%lld", (long long)rec_query_int(q, c));
            else
                snprintf(b, CELL, "%s", rec_query_int(q, c) ? "yes" : "NO");
            break;
        case 8:
        case 9:
        case 10:
        case 11:
        case 13:
            if (csv)
                snprintf(b, CELL, "%.17g", x);
            else if (c == 8)
                report_fmt_time(x, b, CELL);
            else if (c == 11)
                report_fmt_bytes(x, b, CELL);
            else if (c == 13)
                snprintf(b, CELL, "%.3f", x);
            else
                report_fmt_pct(x, b, CELL);
            break;
        case COL_TFLOPS:
        case COL_MFU:
        case COL_MFU + 1:
            if (csv)
                snprintf(b, CELL, "%.17g", x);
            else if (c == COL_MFU)
                report_fmt_pct(x, b, CELL);
            else
                snprintf(b, CELL, "%.1f", x);
            break;
        default: snprintf(b, CELL, "%s", rec_query_text(q, c));
        }
    }
}

int report_runs(rec_db *db, FILE *out, int csv, ps_err *err)
{
    rec_query *q = report_query(db, runs_sql, -1, err);
    if (!q)
        return PS_ERR;
    char(*rows)[NCOLS][CELL] = NULL;
    int n = 0, rc;
    size_t cap = 0;
    while ((rc = rec_query_step(q, err)) == 1) {
        if (VEC_RESERVE(rows, cap, (size_t)n + 1)) {
            rc = ps_errf(err, "out of memory for the run table");
            break;
        }
        run_cells(q, csv, rows[n++]);
    }
    rec_query_free(q);
    if (rc < 0) {
        free(rows);
        return PS_ERR;
    }
    if (csv) {
        for (int c = 0; c < NCOLS; c++)
            fprintf(out, "%s%s", c ? "," : "", csv_name[c]);
        fputc('\n', out);
        for (int r = 0; r < n; r++) {
            for (int c = 0; c < NCOLS; c++) {
                if (c)
                    fputc(',', out);
                report_csv_field(out, rows[r][c]);
            }
            fputc('\n', out);
        }
        free(rows);
        return PS_OK;
    }
    int w[NCOLS];
    for (int c = 0; c < NCOLS; c++) {
        w[c] = (int)strlen(col_name[c]);
        for (int r = 0; r < n; r++)
            if ((int)strlen(rows[r][c]) > w[c])
                w[c] = (int)strlen(rows[r][c]);
    }
    for (int r = -1; r < n; r++) {
        for (int c = 0; c < NCOLS; c++) {
            const char *s = r < 0 ? col_name[c] : rows[r][c];
            int last = c == NCOLS - 1;
            if (col_left[c])
                fprintf(out, "%s%-*s", c ? "  " : "", last ? 0 : w[c], s);
            else
                fprintf(out, "%s%*s", c ? "  " : "", w[c], s);
        }
        fputc('\n', out);
    }
    free(rows);
    return PS_OK;
}
