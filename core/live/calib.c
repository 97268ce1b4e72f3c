/* Calibration of live mode's transport and model (issue 25): a ping-pong
 * between two workers over sizes, its one-way times fitted to
 * latency + bytes / bandwidth by least squares, and the MLP's per-layer
 * F, B and W times. The results feed a cluster file and a profile CSV
 * (lua/pipesim/live.lua), so that the simulator and the measured runs
 * can be compared on the same machine. */
#include "live/calib.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* reps exchanges among n ranks: in each, every rank r sends `bytes` to
 * r + 1 and receives from r - 1 in one batch (send and receive posted
 * together, as a ring step does), so that n flows share the host. */
static int ex_programs(prog_set *ps, double bytes, int reps, int32_t n)
{
    int32_t lane0 = -1;
    for (int32_t r = 0; r < n; r++) {
        int32_t l = prog_add_lane(ps, r);
        if (l < 0)
            return -1;
        lane0 = r == 0 ? l : lane0;
    }
    for (int k = 0; k < reps; k++) {
        int32_t msg0 = -1;
        for (int32_t r = 0; r < n; r++) {
            int32_t m = prog_new_msg(ps);
            msg0 = r == 0 ? m : msg0;
        }
        for (int32_t r = 0; r < n; r++) {
            int32_t to = (r + 1) % n, from = (r + n - 1) % n;
            prog_op ops[2] = {
                prog_send(to, msg0 + r, bytes, PROG_COLL, -1, PROG_BATCH),
                prog_recv(from, msg0 + from, bytes, PROG_COLL, -1, 0),
            };
            if (prog_push(ps, lane0 + r, &ops[0]) ||
                prog_push(ps, lane0 + r, &ops[1]))
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

/* The fastest (or median) of n timings in d (sorted in place). */
static double pick(double *d, int64_t n, int median)
{
    qsort(d, (size_t)n, sizeof *d, cmp);
    return median ? d[(n - 1) / 2] : d[0];
}

/* The fastest (or median) round trip of a ping-pong run: between
 * consecutive receives of a pair's first rank in one iteration (its next
 * send leaves right after); the iteration's start is left out. The
 * fastest by default: on a shared machine a round trip is only ever
 * slowed (a worker descheduled for milliseconds), and the transport's own
 * cost is what the fastest shows; the median is what a run sees under the
 * load of its own ranks. */
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
    if (n > 0)
        *rtt = pick(d, n, median);
    free(d);
    return n > 0 ? PS_OK : ps_errf(err, "calibrate: reps must be at least 2");
}

/* The time of one exchange: per rank and iteration, its last receive's
 * time from the common start over the exchanges (the ranks run as a
 * pipeline, as a ring's steps do: a rank may take two messages in one
 * read, so single gaps mean nothing, their mean does); the fastest (or
 * median) of those. */
static int exchange_time(const live_result *res, int median, int reps,
                         double *t, ps_err *err)
{
    double *d = malloc(((size_t)res->ncounts + 1) * sizeof *d);
    if (!d)
        return ps_errf(err, "out of memory");
    int64_t n = 0;
    double latest = NAN; /* the group's last receive so far */
    for (int64_t k = 0; k < res->ncounts; k++) {
        const live_count *c = &res->counts[k];
        if (!c->send)
            latest = c->t;
        const live_count *next = k + 1 < res->ncounts ? c + 1 : NULL;
        if (!next || next->iteration != c->iteration ||
            next->rank != c->rank) { /* the end of a rank's iteration */
            if (!isnan(latest))
                d[n++] = latest / reps;
            latest = NAN;
        }
    }
    if (n > 0)
        *t = pick(d, n, median);
    free(d);
    return n > 0 ? PS_OK : ps_errf(err, "calibrate: no exchange completed");
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
    int32_t nr = pp->exchange ? (pp->ranks >= 2 ? pp->ranks : 2) : 2 * pairs;
    prog_set *ps = prog_new(nr);
    int rc = zeros && ps ? PS_OK : ps_errf(err, "out of memory");
    pp_ctx ctx = {zeros};
    for (int i = 0; i < pp->n && rc == PS_OK; i++) {
        prog_reset(ps, nr);
        if (pp->exchange ? ex_programs(ps, pp->sizes[i], pp->reps, nr)
                         : pp_programs(ps, pp->sizes[i], pp->reps, pairs)) {
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
        /* one way: half the round trip, or one exchange */
        rc = pp->exchange
                 ? exchange_time(&res, pp->median, pp->reps, &seconds[i], err)
                 : round_trip(&res, pp->median, &seconds[i], err);
        seconds[i] /= pp->exchange ? 1 : 2;
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

/* The kernels' buffers, sized for the widest layer. */
typedef struct prof_bufs {
    double *wt, *g, *x, *a, *d, *dx, *tmp;
    size_t act;
} prof_bufs;

static int bufs_alloc(const mlp *m, int reps, prof_bufs *p)
{
    int32_t most = 0;
    for (int32_t i = 0; i <= m->layers; i++)
        most = m->width[i] > most ? m->width[i] : most;
    p->act = (size_t)m->rows * (size_t)most + 1;
    size_t par = (size_t)most * ((size_t)most + 1) + 1;
    p->wt = malloc(par * sizeof *p->wt);
    p->g = calloc(par, sizeof *p->g);
    p->x = malloc(p->act * sizeof *p->x);
    p->a = malloc(p->act * sizeof *p->a);
    p->d = malloc(p->act * sizeof *p->d);
    p->dx = malloc(p->act * sizeof *p->dx);
    p->tmp = malloc(((size_t)reps + 1) * sizeof *p->tmp);
    return p->wt && p->g && p->x && p->a && p->d && p->dx && p->tmp ? 0 : -1;
}

static void bufs_free(prof_bufs *p)
{
    free(p->wt);
    free(p->g);
    free(p->x);
    free(p->a);
    free(p->d);
    free(p->dx);
    free(p->tmp);
}

/* Times every layer's F, B and W (reps each) into f, b and w. */
static void profile_layers(const mlp *m, int reps, prof_bufs *p, double *f,
                           double *b, double *w)
{
    for (int32_t i = 0; i < m->layers; i++) {
        mlp_init_layer(m, i, p->wt);
        for (size_t k = 0; k < p->act; k++)
            p->x[k] = p->d[k] = 0.5 - (double)(k % 7) / 7;
        double *t[3] = {&f[i], &b[i], &w[i]};
        for (int kind = 0; kind < 3; kind++)
            *t[kind] = time_kernel(m, i, kind, p->wt, p->x, p->a, p->d, p->g,
                                   p->dx, reps, p->tmp);
    }
}

/* Forks n processes that run the kernels until killed (pid[] filled);
 * returns when every one of them has started. -1 when a fork fails
 * (those started are in pid[], the rest -1). */
static int start_load(const mlp *m, int reps, prof_bufs *p, double *scratch,
                      pid_t *pid, int n)
{
    int fd[2];
    for (int k = 0; k < n; k++)
        pid[k] = -1;
    if (n <= 0)
        return 0;
    if (pipe(fd))
        return -1;
    int started = 0;
    for (int k = 0; k < n; k++) {
        pid_t c = fork();
        if (c == 0) { /* the load: the same kernels, until killed */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            close(fd[0]);
            if (write(fd[1], "x", 1) != 1)
                _exit(1);
            close(fd[1]);
            for (;;)
                profile_layers(m, reps, p, scratch, scratch + m->layers,
                               scratch + 2 * m->layers);
        }
        if (c < 0)
            break;
        pid[k] = c;
        started++;
    }
    close(fd[1]);
    char ch;
    for (int k = 0; k < started; k++)
        if (read(fd[0], &ch, 1) != 1)
            break;
    close(fd[0]);
    return started == n ? 0 : -1;
}

static void stop_load(pid_t *pid, int n)
{
    for (int k = 0; k < n; k++)
        if (pid[k] > 0) {
            kill(pid[k], SIGKILL);
            while (waitpid(pid[k], NULL, 0) < 0 && errno == EINTR)
                ;
        }
}

int live_profile_mlp(const mlp *m, int reps, int procs, double *f, double *b,
                     double *w, ps_err *err)
{
    prof_bufs p;
    int nload = procs > 1 ? procs - 1 : 0;
    pid_t *pid = malloc(((size_t)nload + 1) * sizeof *pid);
    double *scratch = malloc((3 * (size_t)m->layers + 1) * sizeof *scratch);
    int rc = bufs_alloc(m, reps, &p) == 0 && pid && scratch && reps >= 1
                 ? PS_OK
                 : ps_errf(err, "calibrate: out of memory");
    if (rc == PS_OK && start_load(m, reps, &p, scratch, pid, nload))
        rc = ps_errf(err, "calibrate: cannot start %d processes: %s", nload,
                     strerror(errno));
    if (rc == PS_OK)
        profile_layers(m, reps, &p, f, b, w);
    if (pid)
        stop_load(pid, nload);
    bufs_free(&p);
    free(pid);
    free(scratch);
    return rc;
}
