/* The coordinator of a live run: listeners, the workers (forked), the
 * iterations and their barrier, what comes back, and the end of every
 * process whatever happens (live/live.h). */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/limit.h"
#include "live/impl.h"

/* A worker as the coordinator sees it. */
typedef struct wk {
    pid_t pid;     /* 0: a rendezvous worker */
    double offset; /* its clock - ours (rendezvous) */
    int ctl;
    int32_t rank;
    int done;    /* reported the current iteration */
    int blocked; /* reported LIVE_BLOCKED since its last message */
    int probed;  /* answered the current probe */
    live_blocked b;
    char text[3000];
} wk;

typedef struct coord {
    const live_cfg *cfg;
    int rdv; /* workers from the rendezvous (live/rdv.c) */
    wk *w;
    int32_t n;
    int32_t measured; /* iterations measured so far */
    double *op_times; /* per measured iteration: 2 per op, lane order */
    int64_t nops;
    int64_t *lane_base;         /* lane -> its first op's index in op_times */
    double *sent, *recvd, *hdr; /* per measured iteration x worker */
    void *buf;
    size_t cap;
} coord;

/* ------------------------------------------------------------------ */
/* Processes                                                           */

/* Kills what is left and waits for every worker; idempotent. Rendezvous
 * workers stay for the next run unless the run failed. */
static void end_workers(coord *c, int failed)
{
    if (c->rdv) {
        if (failed)
            live_rdv_end();
        for (int32_t i = 0; i < c->n; i++)
            c->w[i].ctl = -1;
        return;
    }
    for (int32_t i = 0; i < c->n; i++)
        if (c->w[i].pid > 0)
            kill(c->w[i].pid, SIGKILL);
    for (int32_t i = 0; i < c->n; i++) {
        if (c->w[i].pid > 0)
            while (waitpid(c->w[i].pid, NULL, 0) < 0 && errno == EINTR)
                ;
        c->w[i].pid = 0;
        if (c->w[i].ctl >= 0)
            close(c->w[i].ctl);
        c->w[i].ctl = -1;
    }
}

/* Worker i closed its channel: how it ended, as the run's error. */
static int died(coord *c, int32_t i, ps_err *err)
{
    int status = 0;
    pid_t p = c->w[i].pid;
    if (c->rdv)
        return ps_errf(err, "rank %d: its worker left (its connection closed)",
                       (int)c->w[i].rank);
    if (p > 0) {
        /* a worker that closed its channel is exiting: wait a moment */
        pid_t got = 0;
        for (int k = 0; k < 200 && (got = waitpid(p, &status, WNOHANG)) == 0;
             k++)
            nanosleep(&(struct timespec){0, 5000000}, NULL);
        if (got == 0) {
            kill(p, SIGKILL);
            waitpid(p, &status, 0);
        }
        c->w[i].pid = 0;
    }
    if (WIFSIGNALED(status))
        return ps_errf(err, "rank %d: its worker died (killed by signal %d)",
                       (int)c->w[i].rank, WTERMSIG(status));
    return ps_errf(err, "rank %d: its worker died (exit status %d)",
                   (int)c->w[i].rank, WEXITSTATUS(status));
}

static int listener(live_addr *at)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
        listen(fd, 256) || getsockname(fd, (struct sockaddr *)&a, &len)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    at->port = a.sin_port;
    return fd;
}

/* The child's side of a fork: never returns. */
static void child(const live_cfg *cfg, coord *c, int32_t i, int ctl,
                  const int *lfd, const live_addr *addr, pid_t parent)
{
    /* Ctrl-C reaches the whole process group: the coordinator alone
     * handles it and ends the workers */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* timers to the microsecond: the start of an iteration and injected
     * latencies (the default slack is 50 us) */
    prctl(PR_SET_TIMERSLACK, 1UL);
    if (getppid() != parent)
        _exit(1);
    for (int32_t k = 0; k < c->n; k++) {
        if (c->w[k].ctl >= 0)
            close(c->w[k].ctl);
        if (k != i && lfd[k] >= 0)
            close(lfd[k]);
    }
    _exit(live_worker_main(cfg, c->w[i].rank, ctl, lfd[i], addr));
}

/* The rendezvous's workers instead of forked ones. */
static int attach(coord *c, live_result *res, ps_err *err)
{
    int32_t *rank = malloc(((size_t)c->n + 1) * sizeof *rank);
    int *fds = malloc(((size_t)c->n + 1) * sizeof *fds);
    double *off = malloc(((size_t)c->n + 1) * sizeof *off);
    int rc = rank && fds && off ? PS_OK : ps_errf(err, "out of memory");
    for (int32_t i = 0; i < c->n && rc == PS_OK; i++)
        rank[i] = c->w[i].rank;
    if (rc == PS_OK)
        rc = live_rdv_attach(c->n, rank, c->cfg->ps->nranks, fds, off,
                             &res->clock_error, err);
    for (int32_t i = 0; i < c->n && rc == PS_OK; i++) {
        c->w[i].ctl = fds[i];
        c->w[i].offset = off[i];
    }
    free(rank);
    free(fds);
    free(off);
    return rc;
}

static int spawn(coord *c, ps_err *err)
{
    const live_cfg *cfg = c->cfg;
    int32_t R = cfg->ps->nranks;
    live_addr *ports = calloc((size_t)R + 1, sizeof *ports);
    int *lfd = malloc(((size_t)c->n + 1) * sizeof *lfd);
    int rc = PS_OK;
    if (!ports || !lfd)
        rc = ps_errf(err, "out of memory");
    for (int32_t i = 0; i < c->n && rc == PS_OK; i++) {
        lfd[i] = listener(&ports[c->w[i].rank]);
        ports[c->w[i].rank].ip = htonl(INADDR_LOOPBACK);
        if (lfd[i] < 0) {
            for (int32_t k = 0; k < i; k++)
                close(lfd[k]);
            rc = ps_errf(err, "cannot listen on loopback: %s", strerror(errno));
        }
    }
    if (rc) {
        free(ports);
        free(lfd);
        return rc;
    }
    fflush(NULL);
    pid_t parent = getpid();
    for (int32_t i = 0; i < c->n && rc == PS_OK; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
            rc = ps_errf(err, "socketpair: %s", strerror(errno));
            break;
        }
        pid_t p = fork();
        if (p == 0) {
            close(sv[0]);
            child(cfg, c, i, sv[1], lfd, ports, parent);
        }
        close(sv[1]);
        if (p < 0) {
            close(sv[0]);
            rc = ps_errf(err, "fork: %s", strerror(errno));
            break;
        }
        c->w[i].pid = p;
        c->w[i].ctl = sv[0];
    }
    for (int32_t i = 0; i < c->n; i++)
        close(lfd[i]);
    free(ports);
    free(lfd);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Messages                                                            */

static int stopped(ps_err *err)
{
    if (!limit_stopped())
        return 0;
    char buf[512];
    ps_errf(err, "%s", limit_message(buf, sizeof buf));
    return 1;
}

/* LIVE_DONE of worker i: op times and counters into the measured
 * iteration's slots, message counts into res. */
static int take_done(coord *c, int32_t i, size_t len, int32_t iter,
                     live_result *res, ps_err *err)
{
    live_done d;
    if (len < sizeof d)
        return ps_errf(err, "rank %d: a damaged report", (int)c->w[i].rank);
    memcpy(&d, c->buf, sizeof d);
    size_t tb = (size_t)d.nops * 2 * sizeof(double);
    size_t cb = (size_t)d.ncounts * sizeof(live_count);
    if (d.iteration != iter || d.nops < 0 || d.ncounts < 0 ||
        len != sizeof d + tb + cb)
        return ps_errf(err, "rank %d: a damaged report", (int)c->w[i].rank);
    c->w[i].done = 1;
    int32_t k = iter - c->cfg->warmup;
    if (k < 0)
        return PS_OK;
    const prog_set *ps = c->cfg->ps;
    const double *t = (const double *)((char *)c->buf + sizeof d);
    int64_t at = 0;
    for (int32_t l = 0; l < ps->nlanes; l++) {
        if (ps->lanes[l].rank != c->w[i].rank)
            continue;
        int64_t n = ps->lanes[l].n;
        if (at + n > d.nops)
            return ps_errf(err, "rank %d: a damaged report", (int)c->w[i].rank);
        memcpy(c->op_times + (size_t)k * (size_t)c->nops * 2 +
                   (size_t)c->lane_base[l] * 2,
               t + at * 2, (size_t)n * 2 * sizeof *t);
        at += n;
    }
    int64_t slot = (int64_t)k * c->n + i;
    c->sent[slot] = d.sent;
    c->recvd[slot] = d.recvd;
    c->hdr[slot] = d.header;
    if (d.ncounts) {
        live_count *nc = realloc(
            res->counts, (size_t)(res->ncounts + d.ncounts) * sizeof *nc);
        if (!nc)
            return ps_errf(err, "out of memory");
        memcpy(nc + res->ncounts, (char *)c->buf + sizeof d + tb, cb);
        res->counts = nc;
        res->ncounts += d.ncounts;
    }
    return PS_OK;
}

/* Worker i failed with the message in c->buf. A broken connection is
 * the symptom of a peer that died: the death, when there is one within a
 * moment, is the run's error (naming the rank that died). */
static int failed(coord *c, int32_t i, ps_err *err)
{
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", (char *)c->buf);
    for (int tries = 0; strstr(msg, "broke") && tries < 40; tries++) {
        for (int32_t k = 0; k < c->n; k++) {
            int status;
            if (k == i || c->w[k].pid <= 0 ||
                waitpid(c->w[k].pid, &status, WNOHANG) != c->w[k].pid)
                continue;
            c->w[k].pid = 0;
            if (WIFSIGNALED(status))
                return ps_errf(err,
                               "rank %d: its worker died (killed by signal "
                               "%d)",
                               (int)c->w[k].rank, WTERMSIG(status));
            if (WEXITSTATUS(status) != 0)
                return ps_errf(err, "rank %d: its worker died (exit status %d)",
                               (int)c->w[k].rank, WEXITSTATUS(status));
        }
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    return ps_errf(err, "%s", msg);
}

/* Everyone still running has said it is blocked, and probes confirm that
 * nothing moved since: the engine's deadlock report. */
static int deadlock(coord *c, ps_err *err)
{
    char buf[sizeof err->msg];
    double t = 0;
    for (int32_t i = 0; i < c->n; i++)
        if (!c->w[i].done && c->w[i].b.t > t)
            t = c->w[i].b.t;
    int len = snprintf(buf, sizeof buf, "deadlock at t=%.9g s", t);
    const fault_plan *fp = c->cfg->faults;
    if (fp) {
        char faults[1024];
        int n = fault_append_active(fp, t, faults, 0, sizeof faults);
        if (n > 2)
            len += snprintf(buf + len, sizeof buf - (size_t)len, " (%s)",
                            faults + 2);
    }
    len += snprintf(buf + len, sizeof buf - (size_t)len, ": ");
    int shown = 0;
    for (int32_t i = 0; i < c->n && len < (int)sizeof buf - 1; i++) {
        if (c->w[i].done || !c->w[i].text[0])
            continue;
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%s",
                        shown++ ? "; " : "", c->w[i].text);
    }
    return ps_errf(err, "%s", buf);
}

/* Sends a probe to every blocked worker once they all are blocked. */
static int maybe_probe(coord *c, int *probing, double *quiet_since)
{
    for (int32_t i = 0; i < c->n; i++)
        if (!c->w[i].done && !c->w[i].blocked)
            return 0;
    double watchdog = c->cfg->watchdog > 0 ? c->cfg->watchdog : 2.0;
    if (live_now() - *quiet_since < watchdog || *probing)
        return 0;
    for (int32_t i = 0; i < c->n; i++) {
        c->w[i].probed = 0;
        if (!c->w[i].done &&
            live_ctl_send(c->w[i].ctl, LIVE_PROBE, NULL, 0, NULL, 0))
            return -1;
    }
    *probing = 1;
    return 0;
}

/* One message of worker i during an iteration. Returns PS_OK, PS_ERR, or
 * 1 when the probes show a deadlock. */
static int on_message(coord *c, int32_t i, int32_t iter, int *probing,
                      double *quiet_since, live_result *res, ps_err *err)
{
    uint32_t type;
    size_t len;
    int got = live_ctl_recv(c->w[i].ctl, &type, &c->buf, &c->cap, &len);
    if (got)
        return died(c, i, err);
    wk *w = &c->w[i];
    if (type == LIVE_FAIL)
        return failed(c, i, err);
    if (type == LIVE_DONE) {
        *quiet_since = live_now();
        w->blocked = 0;
        return take_done(c, i, len, iter, res, err);
    }
    if ((type == LIVE_BLOCKED || type == LIVE_PROBED) &&
        len >= sizeof(live_blocked)) {
        live_blocked b;
        memcpy(&b, c->buf, sizeof b);
        if (type == LIVE_BLOCKED) {
            w->blocked = 1;
            w->b = b;
            snprintf(w->text, sizeof w->text, "%s", (char *)c->buf + sizeof b);
            *quiet_since = live_now();
            return PS_OK;
        }
        w->probed = 1;
        if (b.progress != w->b.progress || w->done)
            w->blocked = 0; /* it moved: not a deadlock */
        for (int32_t k = 0; k < c->n; k++)
            if (!c->w[k].done && !c->w[k].probed)
                return PS_OK;
        *probing = 0;
        for (int32_t k = 0; k < c->n; k++)
            if (!c->w[k].done && !c->w[k].blocked)
                return PS_OK;
        return 1;
    }
    return ps_errf(err, "rank %d: unexpected message %u", (int)w->rank,
                   (unsigned)type);
}

/* Waits for every worker's `want` message (LIVE_READY, or LIVE_DONE of
 * iteration iter), watching for failures, deaths, stops and deadlocks. */
static int gather(coord *c, int32_t iter, live_result *res, ps_err *err)
{
    struct pollfd *pf = calloc((size_t)c->n, sizeof *pf);
    if (!pf)
        return ps_errf(err, "out of memory");
    int probing = 0, rc = PS_OK;
    double quiet_since = live_now();
    for (;;) {
        int32_t left = 0;
        for (int32_t i = 0; i < c->n; i++)
            left += !c->w[i].done;
        if (!left || stopped(err)) {
            rc = left ? PS_ERR : PS_OK;
            break;
        }
        for (int32_t i = 0; i < c->n; i++)
            pf[i] = (struct pollfd){c->w[i].ctl, POLLIN, 0};
        int n = poll(pf, (nfds_t)c->n, 50);
        if (n < 0 && errno != EINTR) {
            rc = ps_errf(err, "poll: %s", strerror(errno));
            break;
        }
        for (int32_t i = 0; i < c->n && n > 0 && rc == PS_OK; i++) {
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (iter < 0) { /* setup: LIVE_READY or a failure */
                uint32_t type;
                size_t len;
                if (live_ctl_recv(c->w[i].ctl, &type, &c->buf, &c->cap, &len))
                    rc = died(c, i, err);
                else if (type == LIVE_READY)
                    c->w[i].done = 1;
                else
                    rc = ps_errf(err, "%s",
                                 type == LIVE_FAIL ? (char *)c->buf
                                                   : "a worker misbehaved");
                continue;
            }
            rc = on_message(c, i, iter, &probing, &quiet_since, res, err);
            if (rc == 1)
                rc = deadlock(c, err);
        }
        if (rc)
            break;
        if (iter >= 0 && maybe_probe(c, &probing, &quiet_since))
            rc = ps_errf(err, "a worker is gone");
        if (rc)
            break;
    }
    free(pf);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The run                                                             */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The span of measured iteration k: the latest op end over every rank. */
static double span(const coord *c, int32_t k)
{
    const double *t = c->op_times + (size_t)k * (size_t)c->nops * 2;
    double end = 0;
    for (int64_t i = 0; i < c->nops; i++)
        if (t[2 * i + 1] > end)
            end = t[2 * i + 1];
    return end;
}

/* Writes iteration k's op times into ps; a send's end is its arrival
 * (the receive's end), as the engine's transfers end. */
static void write_times(const coord *c, int32_t k)
{
    prog_set *ps = c->cfg->ps;
    const double *t = c->op_times + (size_t)k * (size_t)c->nops * 2;
    for (int32_t l = 0; l < ps->nlanes; l++) {
        const double *lt = t + (size_t)c->lane_base[l] * 2;
        for (int32_t i = 0; i < ps->lanes[l].n; i++) {
            ps->lanes[l].ops[i].t_start = lt[2 * i];
            ps->lanes[l].ops[i].t_end = lt[2 * i + 1];
        }
    }
    for (int32_t m = 0; m < ps->nmsgs; m++) {
        const prog_msg *pm = &ps->msgs[m];
        if (pm->send_lane < 0 || pm->recv_lane < 0)
            continue; /* an id no op took (a hand-over on one rank) */
        prog_op *s = &ps->lanes[pm->send_lane].ops[pm->send_op];
        const prog_op *r = &ps->lanes[pm->recv_lane].ops[pm->recv_op];
        if (r->t_end > s->t_end)
            s->t_end = r->t_end;
    }
}

static int results(coord *c, live_result *res, ps_err *err)
{
    int32_t K = c->cfg->iterations, R = c->cfg->ps->nranks;
    res->iterations = K;
    res->times = malloc((size_t)K * sizeof *res->times);
    double *sorted = malloc((size_t)K * sizeof *sorted);
    res->bytes_sent = calloc((size_t)R, sizeof(double));
    res->bytes_recvd = calloc((size_t)R, sizeof(double));
    res->header_bytes = calloc((size_t)R, sizeof(double));
    if (!res->times || !sorted || !res->bytes_sent || !res->bytes_recvd ||
        !res->header_bytes) {
        free(sorted);
        return ps_errf(err, "out of memory");
    }
    for (int32_t k = 0; k < K; k++)
        sorted[k] = res->times[k] = span(c, k);
    qsort(sorted, (size_t)K, sizeof *sorted, cmp_double);
    res->median = sorted[(K - 1) / 2]; /* the lower median: a real run */
    free(sorted);
    res->median_iter = 0;
    for (int32_t k = 0; k < K; k++)
        if (res->times[k] == res->median) {
            res->median_iter = k;
            break;
        }
    write_times(c, res->median_iter);
    for (int32_t i = 0; i < c->n; i++) {
        int64_t slot = (int64_t)res->median_iter * c->n + i;
        res->bytes_sent[c->w[i].rank] = c->sent[slot];
        res->bytes_recvd[c->w[i].rank] = c->recvd[slot];
        res->header_bytes[c->w[i].rank] = c->hdr[slot];
    }
    return PS_OK;
}

/* LIVE_FINISH to everyone, LIVE_RESULT back from everyone. */
static int finish(coord *c, live_result *res, ps_err *err)
{
    int32_t R = c->cfg->ps->nranks;
    res->nranks = R;
    res->data = calloc((size_t)R, sizeof *res->data);
    res->data_len = calloc((size_t)R, sizeof *res->data_len);
    if (!res->data || !res->data_len)
        return ps_errf(err, "out of memory");
    for (int32_t i = 0; i < c->n; i++)
        if (live_ctl_send(c->w[i].ctl, LIVE_FINISH, NULL, 0, NULL, 0))
            return died(c, i, err);
    for (int32_t i = 0; i < c->n; i++) {
        uint32_t type;
        size_t len;
        if (live_ctl_recv(c->w[i].ctl, &type, &c->buf, &c->cap, &len))
            return died(c, i, err);
        if (type == LIVE_FAIL)
            return ps_errf(err, "%s", (char *)c->buf);
        if (type != LIVE_RESULT)
            continue;
        int32_t r = c->w[i].rank;
        res->data[r] = malloc(len + 1);
        if (!res->data[r])
            return ps_errf(err, "out of memory");
        memcpy(res->data[r], c->buf, len);
        res->data_len[r] = len;
    }
    return PS_OK;
}

static int check_cfg(const live_cfg *cfg, ps_err *err)
{
    if (cfg->iterations < 1 || cfg->warmup < 0)
        return ps_errf(err, "live: iterations must be at least 1 and warmup "
                            "at least 0");
    const fault_plan *fp = cfg->faults;
    for (int32_t i = 0; fp && i < fp->n; i++)
        if (fp->list[i].kind != FAULT_STALL) {
            char what[128];
            fault_describe(fp, i, what, sizeof what);
            return ps_errf(err,
                           "faults[%d]: backend 'tcp' injects stalls only, "
                           "not '%s'",
                           (int)i + 1, what);
        }
    return PS_OK;
}

static int setup_coord(coord *c, const live_cfg *cfg, ps_err *err)
{
    prog_set *ps = cfg->ps;
    int32_t R = ps->nranks;
    uint8_t *has = calloc((size_t)R + 1, 1);
    c->lane_base = malloc(((size_t)ps->nlanes + 1) * sizeof *c->lane_base);
    if (!has || !c->lane_base) {
        free(has);
        return ps_errf(err, "out of memory");
    }
    for (int32_t l = 0; l < ps->nlanes; l++) {
        c->lane_base[l] = c->nops;
        c->nops += ps->lanes[l].n;
        has[ps->lanes[l].rank] = 1;
    }
    for (int32_t r = 0; r < R; r++)
        c->n += has[r];
    c->w = calloc((size_t)c->n + 1, sizeof *c->w);
    size_t slots = (size_t)cfg->iterations * (size_t)c->n;
    c->op_times = malloc(((size_t)cfg->iterations * (size_t)c->nops * 2 + 1) *
                         sizeof *c->op_times);
    c->sent = calloc(slots + 1, sizeof *c->sent);
    c->recvd = calloc(slots + 1, sizeof *c->recvd);
    c->hdr = calloc(slots + 1, sizeof *c->hdr);
    if (!c->w || !c->op_times || !c->sent || !c->recvd || !c->hdr) {
        free(has);
        return ps_errf(err, "out of memory for %d ranks", (int)c->n);
    }
    int32_t k = 0;
    for (int32_t r = 0; r < R; r++)
        if (has[r])
            c->w[k++] = (wk){.rank = r, .ctl = -1};
    free(has);
    return PS_OK;
}

static void free_coord(coord *c, int failed)
{
    end_workers(c, failed);
    free(c->w);
    free(c->op_times);
    free(c->lane_base);
    free(c->sent);
    free(c->recvd);
    free(c->hdr);
    free(c->buf);
}

int live_run(const live_cfg *cfg, live_result *res, ps_err *err)
{
    if (live_rdv_active() == 2)
        return live_rdv_join(cfg, res, err);
    memset(res, 0, sizeof *res);
    coord c = {.cfg = cfg, .rdv = live_rdv_active() == 1};
    int rc = check_cfg(cfg, err);
    if (rc == PS_OK)
        rc = setup_coord(&c, cfg, err);
    if (rc == PS_OK)
        rc = c.rdv ? attach(&c, res, err) : spawn(&c, err);
    if (rc == PS_OK)
        rc = gather(&c, -1, res, err);
    int32_t total = cfg->warmup + cfg->iterations;
    for (int32_t it = 0; it < total && rc == PS_OK; it++) {
        double t0 = live_now() + 3e-3;
        for (int32_t i = 0; i < c.n; i++)
            c.w[i].done = c.w[i].blocked = 0;
        for (int32_t i = 0; i < c.n && rc == PS_OK; i++) {
            /* in the worker's clock (rendezvous workers on other hosts) */
            live_go g = {it, 0, t0 + c.w[i].offset};
            if (live_ctl_send(c.w[i].ctl, LIVE_GO, &g, sizeof g, NULL, 0))
                rc = died(&c, i, err);
        }
        if (rc == PS_OK)
            rc = gather(&c, it, res, err);
    }
    if (rc == PS_OK)
        rc = finish(&c, res, err);
    if (rc == PS_OK)
        rc = results(&c, res, err);
    free_coord(&c, rc != PS_OK);
    if (rc)
        live_result_free(res);
    return rc;
}

void live_result_free(live_result *res)
{
    if (!res)
        return;
    for (int32_t r = 0; res->data && r < res->nranks; r++)
        free(res->data[r]);
    free(res->data);
    free(res->data_len);
    res->data = NULL;
    res->data_len = NULL;
    free(res->times);
    free(res->bytes_sent);
    free(res->bytes_recvd);
    free(res->header_bytes);
    free(res->counts);
    res->times = res->bytes_sent = res->bytes_recvd = res->header_bytes = NULL;
    res->counts = NULL;
    res->ncounts = 0;
}
