/* Calibration of live mode (live/calib.c): the transport's latency and
 * bandwidth from a ping-pong between two workers, and the live MLP's
 * per-layer times. */
#ifndef PS_LIVE_CALIB_H
#define PS_LIVE_CALIB_H

#include "base/err.h"
#include "live/live.h"
#include "live/mlp.h"

typedef struct live_pp {
    const double *sizes; /* message bytes, n of them */
    int n;
    int iterations, warmup; /* per size, as live_cfg's */
    int reps;               /* round trips per iteration */
    live_inject inject;     /* test only */
    int32_t ranks;          /* processes (>= 2) */
    int median;             /* 1: the median round trip; 0: the fastest */
    int exchange; /* 0: ping-pong in pairs at once; 1: every rank sends to
                     the next and receives from the one before, all at
                     once (a ring's step, ranks flows sharing the host) */
} live_pp;

/* The one-way time of each size (seconds[i]) on loopback: ping-pong
 * between pairs of workers (half the fastest, or the median, of every
 * iteration's round trips but its first), or the exchange among all
 * ranks (the fastest or median time between rank 0's consecutive
 * exchanges). Fails like live_run, or on a size that is not a whole byte
 * count up to 1 GB. */
int live_pingpong(const live_pp *pp, double *seconds, ps_err *err);

/* Least squares of t = latency + x / bandwidth over n points, each
 * weighted by 1 / t^2 (relative errors): returns 0, or -1 with fewer than
 * two distinct sizes or a time that is not > 0. bandwidth is INFINITY
 * when the times do not grow with the size. */
int live_fit(const double *x, const double *t, int n, double *latency,
             double *bandwidth);

/* Each layer's forward, input-gradient (B) and weight-gradient (W)
 * seconds for one microbatch of m->rows samples, the median of reps
 * timings, into f, b and w (m->layers entries), while procs - 1 other
 * processes (forked, killed after) run the same kernels: the speed a
 * stage computes at when every rank of a live run computes at once. */
int live_profile_mlp(const mlp *m, int reps, int procs, double *f, double *b,
                     double *w, ps_err *err);

#endif
