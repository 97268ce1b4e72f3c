/* Rendezvous: live runs whose workers come from other processes or hosts
 * (`pipesim run --rendezvous HOST:PORT --workers W` and `pipesim worker
 * --rendezvous HOST:PORT`, as torchrun's master address). The
 * coordinator waits for W workers before the scenario starts and sends
 * each the scenario's text and -D arguments; every worker runs the same
 * scenario (sandboxed, nothing recorded), so that at each live run it
 * holds the same programs and front-end state a forked worker would
 * inherit, and joins the run: JOIN (the run's sequence number), a clock
 * exchange, ASSIGN (its rank or none, every rank's data address), then
 * the control protocol of live/run.c over the TCP connection.
 *
 * Clocks: workers on the coordinator's host (the same boot id) share its
 * CLOCK_MONOTONIC (offset 0, error 0). Others are aligned by 8 ping-pongs
 * on the control connection: offset = worker time - the midpoint of the
 * fastest exchange, error bound half its round trip (NTP's rule). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/limit.h"
#include "live/impl.h"

#define RDV_MAGIC 0x50534c52u /* "PSLR" */
#define RDV_VERSION 1u
#define PINGS 8

typedef struct hello {
    uint32_t magic, version;
    uint16_t port, pad; /* the worker's data listener, network order */
    uint32_t pad2;
    char boot[40];
} hello;

typedef struct rdv_worker {
    int fd;
    uint32_t ip;   /* as the coordinator sees it, network order */
    uint16_t port; /* its data listener */
    int same_host; /* one CLOCK_MONOTONIC with the coordinator */
} rdv_worker;

static struct {
    int on;        /* 1 coordinator, 2 worker */
    rdv_worker *w; /* coordinator: the workers, in arrival order */
    int nw;
    int32_t seq;    /* live runs so far */
    int fd;         /* worker: the control connection */
    int listen_fd;  /* worker: its data listener */
    live_addr self; /* worker: its data listener's port */
} rdv = {0, NULL, 0, 0, -1, -1, {0, 0, 0}};

static void boot_id(char *buf, size_t n)
{
    memset(buf, 0, n);
    /* a test hook: a worker that takes itself for another host aligns its
     * clock by pings (tests/cli_live.sh) */
    const char *fake = getenv("PIPESIM_TEST_BOOT_ID");
    if (fake) {
        snprintf(buf, n, "%s", fake);
        return;
    }
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(buf, (int)n, f))
            buf[0] = '\0';
        fclose(f);
    }
}

/* host:port into a socket address; -1 on a bad address. */
static int resolve(const char *hostport, struct sockaddr_in *a, ps_err *err)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (!colon || colon == hostport ||
        (size_t)(colon - hostport) >= sizeof host)
        return ps_errf(err, "--rendezvous %s: expected HOST:PORT", hostport);
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535)
        return ps_errf(err, "--rendezvous %s: the port must be 1..65535",
                       hostport);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, NULL, &hints, &ai) || !ai)
        return ps_errf(err, "--rendezvous %s: unknown host '%s'", hostport,
                       host);
    *a = *(struct sockaddr_in *)ai->ai_addr;
    a->sin_port = htons((uint16_t)port);
    freeaddrinfo(ai);
    return PS_OK;
}

int live_rdv_active(void)
{
    return rdv.on;
}

/* ------------------------------------------------------------------ */
/* The coordinator                                                     */

int live_rdv_serve(const char *hostport, int workers, double timeout,
                   const char *name, const char *text, size_t len,
                   const char *const *defs, int ndefs, ps_err *err)
{
    struct sockaddr_in a;
    if (resolve(hostport, &a, err))
        return PS_ERR;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 64)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return ps_errf(err, "--rendezvous %s: cannot listen: %s", hostport,
                       strerror(e));
    }
    rdv.w = calloc((size_t)workers, sizeof *rdv.w);
    if (!rdv.w) {
        close(fd);
        return ps_errf(err, "out of memory");
    }
    char me[40];
    boot_id(me, sizeof me);
    double until = live_now() + timeout;
    int rc = PS_OK;
    while (rdv.nw < workers && rc == PS_OK) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (limit_stopped()) {
            char buf[256];
            rc = ps_errf(err, "%s", limit_message(buf, sizeof buf));
        } else if (live_now() > until) {
            rc = ps_errf(err,
                         "--rendezvous %s: %d of %d workers joined in %g s "
                         "(start them with pipesim worker --rendezvous %s)",
                         hostport, rdv.nw, workers, timeout, hostport);
        } else if (poll(&pf, 1, 100) > 0) {
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            int c = accept(fd, (struct sockaddr *)&from, &fl);
            hello h;
            if (c < 0)
                continue;
            if (read(c, &h, sizeof h) != (ssize_t)sizeof h ||
                h.magic != RDV_MAGIC || h.version != RDV_VERSION) {
                close(c); /* not a worker of this pipesim */
                continue;
            }
            setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            rdv.w[rdv.nw] = (rdv_worker){c, from.sin_addr.s_addr, h.port,
                                         strncmp(h.boot, me, sizeof me) == 0};
            /* the scenario: name, text, then the -D arguments */
            uint32_t nd = (uint32_t)ndefs;
            int bad = live_ctl_send(c, LIVE_SCENARIO, &nd, sizeof nd, name,
                                    strlen(name) + 1) ||
                      live_ctl_send(c, LIVE_SCENARIO, text, len, NULL, 0);
            for (int k = 0; k < ndefs && !bad; k++)
                bad = live_ctl_send(c, LIVE_SCENARIO, defs[k],
                                    strlen(defs[k]) + 1, NULL, 0);
            if (bad)
                close(c);
            else
                rdv.nw++;
        }
    }
    close(fd);
    if (rc == PS_OK)
        rdv.on = 1;
    return rc;
}

/* The worker's clock offset (its time - ours) and its bound. */
static int align(const rdv_worker *w, double *offset, double *bound)
{
    *offset = 0;
    *bound = 0;
    if (w->same_host)
        return 0;
    double best = INFINITY;
    void *buf = NULL;
    size_t cap = 0, len;
    uint32_t type;
    for (int k = 0; k < PINGS; k++) {
        double t0 = live_now(), tw;
        if (live_ctl_send(w->fd, LIVE_PING, &t0, sizeof t0, NULL, 0) ||
            live_ctl_recv(w->fd, &type, &buf, &cap, &len) ||
            type != LIVE_PONG || len != sizeof tw) {
            free(buf);
            return -1;
        }
        double t1 = live_now();
        memcpy(&tw, buf, sizeof tw);
        if (t1 - t0 < best) {
            best = t1 - t0;
            *offset = tw - (t0 + t1) / 2;
            *bound = best / 2;
        }
    }
    free(buf);
    return 0;
}

int live_rdv_attach(int32_t n, const int32_t *rank, int32_t nranks, int *fds,
                    double *offsets, double *bound, ps_err *err)
{
    if (n > rdv.nw)
        return ps_errf(err,
                       "this live run needs %d workers, %d joined the "
                       "rendezvous (pipesim run --workers)",
                       (int)n, rdv.nw);
    int32_t seq = rdv.seq++;
    void *buf = NULL;
    size_t cap = 0, len;
    uint32_t type;
    int rc = PS_OK;
    for (int i = 0; i < rdv.nw && rc == PS_OK; i++) {
        int32_t got[2];
        if (live_ctl_recv(rdv.w[i].fd, &type, &buf, &cap, &len) ||
            type != LIVE_JOIN || len != sizeof got)
            rc = ps_errf(err, "worker %d left the rendezvous", i);
        else if (memcpy(got, buf, sizeof got),
                 got[0] != seq || got[1] != nranks)
            rc = ps_errf(err,
                         "worker %d reached another live run (%d of %d "
                         "ranks, the coordinator's is %d of %d): the "
                         "scenario must run the same everywhere",
                         i, (int)got[0], (int)got[1], (int)seq, (int)nranks);
    }
    free(buf);
    live_addr *addr = calloc((size_t)nranks + 1, sizeof *addr);
    if (rc == PS_OK && !addr)
        rc = ps_errf(err, "out of memory");
    *bound = 0;
    for (int32_t i = 0; i < n && rc == PS_OK; i++) {
        double b;
        if (align(&rdv.w[i], &offsets[i], &b))
            rc = ps_errf(err, "worker %d left the rendezvous", (int)i);
        *bound = b > *bound ? b : *bound;
        addr[rank[i]] = (live_addr){rdv.w[i].ip, rdv.w[i].port, 0};
        fds[i] = rdv.w[i].fd;
    }
    for (int i = 0; i < rdv.nw && rc == PS_OK; i++) {
        int32_t as[2] = {i < n ? rank[i] : -1, nranks};
        if (live_ctl_send(rdv.w[i].fd, LIVE_ASSIGN, as, sizeof as, addr,
                          (size_t)nranks * sizeof *addr))
            rc = ps_errf(err, "worker %d left the rendezvous", i);
    }
    free(addr);
    if (rc)
        live_rdv_end();
    return rc;
}

void live_rdv_end(void)
{
    for (int i = 0; i < rdv.nw; i++)
        close(rdv.w[i].fd);
    free(rdv.w);
    rdv.w = NULL;
    rdv.nw = 0;
    if (rdv.on == 2) {
        close(rdv.fd);
        close(rdv.listen_fd);
    }
    rdv.on = 0;
}

/* ------------------------------------------------------------------ */
/* The worker                                                          */

int live_rdv_connect(const char *hostport, double timeout, live_job *job,
                     ps_err *err)
{
    struct sockaddr_in a;
    memset(job, 0, sizeof *job);
    if (resolve(hostport, &a, err))
        return PS_ERR;
    /* the data listener: any address, so that peers on other hosts reach
     * it at the address the coordinator sees */
    int lf = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in any = {.sin_family = AF_INET};
    socklen_t al = sizeof any;
    if (lf < 0 || bind(lf, (struct sockaddr *)&any, sizeof any) ||
        listen(lf, 256) || getsockname(lf, (struct sockaddr *)&any, &al))
        return ps_errf(err, "cannot listen: %s", strerror(errno));
    int fd = -1;
    double until = live_now() + timeout;
    while (fd < 0) { /* the coordinator may start after its workers */
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            break;
        if (fd >= 0)
            close(fd);
        fd = -1;
        if (live_now() > until || limit_stopped()) {
            close(lf);
            return ps_errf(err, "--rendezvous %s: no coordinator there",
                           hostport);
        }
        nanosleep(&(struct timespec){0, 200000000}, NULL);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    hello h = {RDV_MAGIC, RDV_VERSION, any.sin_port, 0, 0, {0}};
    boot_id(h.boot, sizeof h.boot);
    void *buf = NULL;
    size_t cap = 0, len;
    uint32_t type, nd = 0;
    int rc = write(fd, &h, sizeof h) == (ssize_t)sizeof h ? PS_OK : PS_ERR;
    for (int part = 0; rc == PS_OK && part < 2 + (int)nd; part++) {
        if (live_ctl_recv(fd, &type, &buf, &cap, &len) ||
            type != LIVE_SCENARIO) {
            rc = PS_ERR;
            break;
        }
        if (part == 0 && len > sizeof nd) { /* count, then the name */
            memcpy(&nd, buf, sizeof nd);
            job->name = strdup((char *)buf + sizeof nd);
            job->defs = calloc((size_t)nd + 1, sizeof *job->defs);
        } else if (part == 1) {
            job->text = malloc(len + 1);
            if (job->text)
                memcpy(job->text, buf, len + 1);
            job->len = len;
        } else if (job->defs) {
            job->defs[job->ndefs++] = strdup(buf);
        }
    }
    free(buf);
    if (rc || !job->name || !job->text || (nd && !job->defs)) {
        close(fd);
        close(lf);
        live_job_free(job);
        return ps_errf(err,
                       "--rendezvous %s: the coordinator sent no "
                       "scenario",
                       hostport);
    }
    rdv.on = 2;
    rdv.fd = fd;
    rdv.listen_fd = lf;
    return PS_OK;
}

void live_job_free(live_job *job)
{
    for (int k = 0; k < job->ndefs; k++)
        free(job->defs[k]);
    free(job->defs);
    free(job->name);
    free(job->text);
    memset(job, 0, sizeof *job);
}

int live_rdv_join(const live_cfg *cfg, live_result *res, ps_err *err)
{
    memset(res, 0, sizeof *res);
    res->worker = 1;
    int32_t me[2] = {rdv.seq++, cfg->ps->nranks};
    void *buf = NULL;
    size_t cap = 0, len;
    uint32_t type;
    if (live_ctl_send(rdv.fd, LIVE_JOIN, me, sizeof me, NULL, 0))
        _exit(1);
    for (;;) { /* clock pings, then the assignment */
        if (live_ctl_recv(rdv.fd, &type, &buf, &cap, &len))
            _exit(1); /* the coordinator is gone: so is the run */
        if (type == LIVE_PING) {
            double t = live_now();
            if (live_ctl_send(rdv.fd, LIVE_PONG, &t, sizeof t, NULL, 0))
                _exit(1);
            continue;
        }
        break;
    }
    int32_t as[2];
    if (type != LIVE_ASSIGN || len < sizeof as) {
        free(buf);
        return ps_errf(err, "the coordinator sent a bad assignment");
    }
    memcpy(as, buf, sizeof as);
    int rc = PS_OK;
    if (as[0] >= 0) {
        live_addr *addr = calloc((size_t)as[1] + 1, sizeof *addr);
        if (!addr || len != sizeof as + (size_t)as[1] * sizeof *addr ||
            as[1] != cfg->ps->nranks) {
            free(addr);
            free(buf);
            return ps_errf(err, "the coordinator sent a bad assignment");
        }
        memcpy(addr, (char *)buf + sizeof as, (size_t)as[1] * sizeof *addr);
        if (live_worker_main(cfg, as[0], rdv.fd, rdv.listen_fd, addr))
            _exit(1); /* failed, and said so: every process ends */
        free(addr);
    }
    free(buf);
    return rc;
}
