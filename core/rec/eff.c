/* The efficiency columns of a run row (issue 27 item 16): the step's
 * inputs as the front end gave them (rec_eff, rec/rec.h) and the four
 * rates over the simulated step, each per GPU: model TFLOP/s, MFU,
 * hardware TFLOP/s and tokens per second. A rate is each figure over
 * makespan x gpus, as Megatron-LM's training_log divides by
 * elapsed_time_per_iteration x world_size (megatron/training/training.py);
 * the figures themselves are defined in lua/pipesim/efficiency.lua. */
#include <math.h>

#include "rec/impl.h"

/* v / (makespan x gpus x scale), or NAN when an input is unknown. */
static double per_gpu_second(double v, double makespan, int64_t gpus,
                             double scale)
{
    if (!(v > 0) || !(makespan > 0) || !isfinite(makespan) || gpus <= 0 ||
        !(scale > 0))
        return NAN;
    return v / (makespan * (double)gpus * scale);
}

static void put_real_or_null(sqlite3_stmt *st, int i, double v)
{
    if (v > 0 && isfinite(v))
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

static void put_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
    if (s && *s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

void rec_bind_efficiency(sqlite3_stmt *st, int i, const rec_eff *e,
                         double makespan)
{
    put_real_or_null(st, i, e->model_flops);
    put_real_or_null(st, i + 1, e->hardware_flops);
    put_real_or_null(st, i + 2, e->tokens);
    if (e->gpus > 0)
        sqlite3_bind_int64(st, i + 3, e->gpus);
    else
        sqlite3_bind_null(st, i + 3);
    put_real_or_null(st, i + 4, e->peak_flops);
    put_text_or_null(st, i + 5, e->precision);
    put_real_or_null(st, i + 6,
                     per_gpu_second(e->model_flops, makespan, e->gpus, 1e12));
    put_real_or_null(
        st, i + 7,
        per_gpu_second(e->model_flops, makespan, e->gpus, e->peak_flops));
    put_real_or_null(
        st, i + 8, per_gpu_second(e->hardware_flops, makespan, e->gpus, 1e12));
    put_real_or_null(st, i + 9,
                     per_gpu_second(e->tokens, makespan, e->gpus, 1));
    put_text_or_null(st, i + 10, e->note);
}
