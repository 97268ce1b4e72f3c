/* The closed forms of a pipeline's bubble (step/pipe.h): the textbook
 * schedules, the zero-bubble ones and DeepSeek's bidirectional ones, each
 * where it is exact. Pure functions of the schedule and the stage times. */
#include "step/pipe.h"

#include <math.h>

double pipe_closed_form_bubble(enum sched_kind kind, int32_t p, int32_t v,
                               int32_t m)
{
    switch (kind) {
    case SCHED_GPIPE:
    case SCHED_1F1B:
    /* inference: each rank idles (p-1)F of (m+p-1)F */
    case SCHED_FORWARD_ONLY: return (double)(p - 1) / (double)(m + p - 1);
    case SCHED_INTERLEAVED: return (double)(p - 1) / ((double)v * m + p - 1);
    default: return NAN;
    }
}

double pipe_closed_form_split(enum sched_kind kind, int32_t p, int32_t m,
                              double f, double b, double w)
{
    /* Where the forms hold was checked against the simulated schedules
     * (tests/unit/test_sched.c, test_zb_closed_form): H1 needs W no
     * longer than F and B (the paper's W fills the warm-up gaps F + B - W
     * long) and m >= p; H2 equal costs and m >= 2p (its warm-up holds 2p
     * forwards). Elsewhere the schedule is valid but the form is not. */
    double idle;
    switch (kind) {
    case SCHED_1F1B: idle = (p - 1) * (f + b); break;
    case SCHED_ZB_H1:
        if (m < p || w > f || w > b)
            return NAN;
        idle = (p - 1) * (f + b - w);
        break;
    case SCHED_ZB_H2:
        if (m < 2 * p || f != b || b != w)
            return NAN;
        idle = (p - 1) * f;
        break;
    default: return NAN;
    }
    double busy = m * (f + b + w);
    return busy + idle > 0 ? idle / (busy + idle) : NAN;
}

double pipe_closed_form_dual(enum sched_kind kind, int32_t p, int32_t m,
                             double f, double b, double w)
{
    /* DeepSeek-V3 technical report (arXiv:2412.19437), section 3.2.1,
     * Table 2, which github.com/deepseek-ai/DualPipe's README repeats:
     * the bubble of DualPipe is (PP/2 - 1)(F&B + B - 3W), PP pipeline
     * stages, F a forward chunk, B a full backward chunk, W its weight
     * part, F&B an overlapped forward and backward. DualPipe on p ranks has
     * PP = p; DualPipeV, DualPipe "cut in half", holds PP = 2p stages on p
     * ranks. Here B = b + w and F&B = F + B, pipesim's F&B when nothing
     * says it hides time (sched/sched.h): every rank is then busy m (f + b + w)
     * (DualPipe: m/2 microbatches each way through its two chunks) or
     * 2m (f + b + w) (DualPipeV: all m through both), so every rank idles
     * the same and the mean fraction is the table's idle over busy + idle.
     * The form is exact with f = b = w and m >= 2p (tests/unit/test_ds.c,
     * test_pipe.c); with unequal parts it bounds the worst rank only. */
    double busy, pp;
    switch (kind) {
    case SCHED_DUALPIPE:
        busy = m * (f + b + w);
        pp = p;
        break;
    case SCHED_DUALPIPEV:
        busy = 2.0 * m * (f + b + w);
        pp = 2.0 * p;
        break;
    default: return NAN;
    }
    if (m < 2 * p || f != b || b != w)
        return NAN;
    double idle = (pp / 2 - 1) * ((f + b + w) + (b + w) - 3 * w);
    return busy + idle > 0 ? idle / (busy + idle) : NAN;
}
