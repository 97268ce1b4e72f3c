/* A training step's efficiency line under its summary (`pipesim report DB
 * RUN`, ps.show(r)): model FLOPs per step, model TFLOP/s per GPU, MFU
 * against the dense peak at the run's precision, hardware TFLOP/s with
 * recompute and tokens per second per GPU (issue 27 item 16; the run
 * columns of rec/rec.h, defined in docs/efficiency.md). Figures the run
 * could not give print as "-" and the run's note, appended, says why. */
#include "out/report.h"

#include <stdio.h>

#include "out/report_impl.h"

enum {
    MODEL,
    HARDWARE,
    TOKENS,
    GPUS,
    PEAK,
    PRECISION,
    TFLOPS,
    MFU,
    HW_TFLOPS,
    TOK_S,
    NOTE,
    NFIELDS
};

static const char eff_sql[] =
    "SELECT model_flops, hardware_flops, tokens, gpus, peak_flops, precision, "
    "model_tflops_per_gpu, mfu, hardware_tflops_per_gpu, "
    "tokens_per_s_per_gpu, efficiency_note FROM run WHERE id = ?1 AND kind = "
    "'pipeline'";

/* "%.4g unit" of column c into buf, or "-" when NULL. */
static const char *num(rec_query *q, int c, double scale, const char *fmt,
                       char *buf, size_t size)
{
    if (rec_query_isnull(q, c))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, fmt, rec_query_double(q, c) * scale);
    return buf;
}

int report_efficiency(rec_db *db, int64_t run, FILE *out, int width,
                      ps_err *err)
{
    rec_query *q = report_query(db, eff_sql, run, err);
    if (!q)
        return PS_ERR;
    int rc = rec_query_step(q, err);
    int any = 0;
    for (int c = 0; rc == 1 && c < NFIELDS; c++)
        any |= !rec_query_isnull(q, c);
    if (rc == 1 && any) {
        char a[6][48], line[1536], pct[32];
        const char *prec =
            rec_query_isnull(q, PRECISION) ? "" : rec_query_text(q, PRECISION);
        const char *note =
            rec_query_isnull(q, NOTE) ? NULL : rec_query_text(q, NOTE);
        int n = snprintf(line, sizeof line, "efficiency on %s GPUs: ",
                         num(q, GPUS, 1, "%.0f", a[0], sizeof a[0]));
        if (rec_query_isnull(q, MODEL))
            snprintf(line + n, sizeof line - (size_t)n, "%s",
                     note ? note : "no FLOP figures");
        else
            snprintf(
                line + n, sizeof line - (size_t)n,
                "model %s FLOP per step, %s TFLOP/s per GPU, MFU %s of %s "
                "TFLOP/s%s%s%s, hardware %s TFLOP/s per GPU (with "
                "recompute), %s tokens/s per GPU%s%s",
                num(q, MODEL, 1, "%.4g", a[1], sizeof a[1]),
                num(q, TFLOPS, 1, "%.4g", a[2], sizeof a[2]),
                rec_query_isnull(q, MFU)
                    ? "-"
                    : report_fmt_pct(rec_query_double(q, MFU), pct, sizeof pct),
                num(q, PEAK, 1e-12, "%.4g", a[3], sizeof a[3]),
                *prec ? " (" : "", prec, *prec ? ")" : "",
                num(q, HW_TFLOPS, 1, "%.4g", a[4], sizeof a[4]),
                num(q, TOK_S, 1, "%.4g", a[5], sizeof a[5]), note ? ", " : "",
                note ? note : "");
        report_wrap(out, line, width);
    }
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}
