/* Calibration of live mode's transport and model (issue 25): a ping-pong
 * between two workers over sizes, its one-way times fitted to
 * latency + bytes / bandwidth by least squares, and the MLP's per-layer
 * F, B and W times. The results feed a cluster file and a profile CSV
 * (lua/pipesim/live.lua), so that the simulator and the measured runs
 * can be compared on the same machine. */
#include "live/calib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "live/live.h"

typedef struct pp_ctx {
    const char *zeros; /* the payload of every send */
} pp_ctx;

static int pp_send(void *ctx, int32_t rank, int32_t lane, int32_t index,
                   const prog_op *op, const void **data, size_t *len,
                   ps_err *err)
{
    (void)rank, (void)lane, (void)index, (void)err;
    *data = ((const pp_ctx *)ctx)->zeros;
    *len = (size_t)op->bytes;
    return PS_OK;
}

static int pp_recv_len(void *ctx, int32_t rank, int32_t lane, int32_t index,
                       const prog_op *op, size_t *len, ps_err *err)
{
    (void)ctx, (void)rank, (void)lane, (void)index, (void)err;
    *len = (size_t)op->bytes;
    return PS_OK;
}

static int pp_recv_done(void *ctx, int32_t rank, int32_t lane, int32_t index,
                        const prog_op *op, const void *data, size_t len,
                        ps_err *err)
{
    (void)ctx, (void)rank, (void)lane, (void)index, (void)op, (void)data;
    (void)len, (void)err;
    return PS_OK;
}

static const live_ops pp_ops = {
    .send_data = pp_send,
    .recv_len = pp_recv_len,
    .recv_done = pp_recv_done,
};

/* reps round trips of `bytes` between ranks 2q and 2q + 1 of every pair
 * q, each op its own batch (a blocking send, then the receive). */
static int pp_programs(prog_set *ps, double bytes, int reps, int32_t pairs)
{
    for (int32_t q = 0; q < pairs; q++) {
        int32_t r0 = 2 * q, r1 = 2 * q + 1;
        int32_t a = prog_add_lane(ps, r0), b = prog_add_lane(ps, r1);
        if (a < 0 || b < 0)
            return -1;
        for (int k = 0; k < reps; k++) {
            int32_t there = prog_new_msg(ps), back = prog_new_msg(ps);
            prog_op ops[4] = {
                prog_send(r1, there, bytes, PROG_COLL, -1, 0),
                prog_recv(r1, back, bytes, PROG_COLL, -1, 0),
                prog_recv(r0, there, bytes, PROG_COLL, -1, 0),
                prog_send(r0, back, bytes, PROG_COLL, -1, 0),
            };
            if (prog_push(ps, a, &ops[0]) || prog_push(ps, a, &ops[1]) ||
                prog_push(ps, b, &ops[2]) || prog_push(ps, b, &ops[3]))
                return -1;
        }
    }
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The fastest (or median) round trip of a ping-pong run: between
 * consecutive receives of a pair's first rank in one iteration (its next
 * send leaves right after); the iteration's start is left out. The
 * fastest by default: on a shared machine a round trip is only ever
 * slowed (a worker descheduled for milliseconds), and the transport's own
 * cost is what the fastest shows; the median is what a run sees under the
 * load of its own ranks (ranks > 2 ping-pong in pairs at once). */
static int round_trip(const live_result *res, int median, double *rtt,
                      ps_err *err)
{
    double *d = malloc(((size_t)res->ncounts + 1) * sizeof *d);
    if (!d)
        return ps_errf(err, "out of memory");
    int64_t n = 0;
    double prev = NAN;
    int32_t it = -1, rank = -1;
    for (int64_t k = 0; k < res->ncounts; k++) {
        const live_count *c = &res->counts[k];
        if (c->rank % 2 || c->send)
            continue; /* each pair's first rank's receives, in order */
        if (c->iteration == it && c->rank == rank && !isnan(prev))
            d[n++] = c->t - prev;
        it = c->iteration;
        rank = c->rank;
        prev = c->t;
    }
    if (n == 0) {
        free(d);
        return ps_errf(err, "calibrate: reps must be at least 2");
    }
    qsort(d, (size_t)n, sizeof *d, cmp);
    *rtt = median ? d[(n - 1) / 2] : d[0];
    free(d);
    return PS_OK;
}

int live_pingpong(const live_pp *pp, double *seconds, ps_err *err)
{
    double most = 0;
    for (int i = 0; i < pp->n; i++) {
        if (!(pp->sizes[i] >= 0) || pp->sizes[i] > 1e9 ||
            pp->sizes[i] != floor(pp->sizes[i]))
            return ps_errf(err,
                           "calibrate: sizes must be whole byte counts up to "
                           "1 GB, got %g",
                           pp->sizes[i]);
        most = fmax(most, pp->sizes[i]);
    }
    char *zeros = calloc((size_t)most + 1, 1);
    int32_t pairs = pp->ranks >= 2 ? pp->ranks / 2 : 1;
    prog_set *ps = prog_new(2 * pairs);
    int rc = zeros && ps ? PS_OK : ps_errf(err, "out of memory");
    pp_ctx ctx = {zeros};
    for (int i = 0; i < pp->n && rc == PS_OK; i++) {
        prog_reset(ps, 2 * pairs);
        if (pp_programs(ps, pp->sizes[i], pp->reps, pairs)) {
            rc = ps_errf(err, "out of memory");
            break;
        }
        if ((rc = prog_seal(ps, err)))
            break;
        live_cfg cfg = {.ps = ps,
                        .ops = &pp_ops,
                        .ctx = &ctx,
                        .iterations = pp->iterations,
                        .warmup = pp->warmup,
                        .inject = pp->inject};
        live_result res;
        if ((rc = live_run(&cfg, &res, err)))
            break;
        /* one way: half the median round trip */
        rc = round_trip(&res, pp->median, &seconds[i], err);
        seconds[i] /= 2;
        live_result_free(&res);
    }
    prog_free(ps);
    free(zeros);
    return rc;
}

int live_fit(const double *x, const double *t, int n, double *latency,
             double *bandwidth)
{
    /* weighted by 1 / t^2: the relative error of every point counts the
     * same, so the small sizes set the latency and the large ones the
     * bandwidth (in plain least squares the largest size decides both) */
    double sw = 0, sx = 0, st = 0, sxx = 0, sxt = 0;
    for (int i = 0; i < n; i++) {
        if (!(t[i] > 0))
            return -1;
        double w = 1 / (t[i] * t[i]);
        sw += w;
        sx += w * x[i];
        st += w * t[i];
        sxx += w * x[i] * x[i];
        sxt += w * x[i] * t[i];
    }
    double d = sw * sxx - sx * sx;
    if (n < 2 || !(d > 0))
        return -1;
    double slope = (sw * sxt - sx * st) / d; /* seconds per byte */
    *latency = (st - slope * sx) / sw;
    *bandwidth = slope > 0 ? 1 / slope : INFINITY;
    return 0;
}

/* The median of reps timings of one kernel (kind 0 F, 1 B, 2 W). */
static double time_kernel(const mlp *m, int32_t i, int kind, double *w,
                          double *x, double *a, double *d, double *g,
                          double *dx, int reps, double *tmp)
{
    for (int r = 0; r < reps; r++) {
        double t0 = live_clock();
        if (kind == 0)
            mlp_forward(m, i, w, x, a, m->rows);
        else if (kind == 1)
            mlp_backward_input(m, i, w, a, d, d, i ? dx : NULL, m->rows);
        else
            mlp_backward_weight(m, i, x, d, g, m->rows);
        tmp[r] = live_clock() - t0;
    }
    qsort(tmp, (size_t)reps, sizeof *tmp, cmp);
    return tmp[(reps - 1) / 2];
}

int live_profile_mlp(const mlp *m, int reps, double *f, double *b, double *w,
                     ps_err *err)
{
    int32_t most = 0;
    for (int32_t i = 0; i <= m->layers; i++)
        most = m->width[i] > most ? m->width[i] : most;
    size_t act = (size_t)m->rows * (size_t)most + 1;
    size_t par = (size_t)most * ((size_t)most + 1) + 1;
    double *wt = malloc(par * sizeof *wt), *g = calloc(par, sizeof *g);
    double *x = malloc(act * sizeof *x), *a = malloc(act * sizeof *a);
    double *d = malloc(act * sizeof *d), *dx = malloc(act * sizeof *dx);
    double *tmp = malloc(((size_t)reps + 1) * sizeof *tmp);
    int rc = wt && g && x && a && d && dx && tmp && reps >= 1
                 ? PS_OK
                 : ps_errf(err, "calibrate: out of memory");
    for (int32_t i = 0; i < m->layers && rc == PS_OK; i++) {
        mlp_init_layer(m, i, wt);
        for (size_t k = 0; k < act; k++)
            x[k] = d[k] = 0.5 - (double)(k % 7) / 7;
        f[i] = time_kernel(m, i, 0, wt, x, a, d, g, dx, reps, tmp);
        b[i] = time_kernel(m, i, 1, wt, x, a, d, g, dx, reps, tmp);
        w[i] = time_kernel(m, i, 2, wt, x, a, d, g, dx, reps, tmp);
    }
    free(wt);
    free(g);
    free(x);
    free(a);
    free(d);
    free(dx);
    free(tmp);
    return rc;
}
