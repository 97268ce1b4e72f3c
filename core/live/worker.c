/* A worker: one rank's lanes executed for real. One thread and one poll
 * loop: lanes advance while they can (compute runs inline, a batch of
 * sends and receives is posted at once), then the loop waits for the
 * sockets, the control channel or the next deadline. The engine's rules
 * (sim/eng.h) with real time: see live/live.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "live/worker.h"

/* A worker with no progress for this long tells the coordinator what it
 * waits on (the coordinator decides whether everyone is stuck). */
#define QUIET_S 0.1

/* ------------------------------------------------------------------ */
/* Lanes                                                               */

static int pump(worker *w, int block, ps_err *err);

/* Advances lr as far as it goes; *moved is set when anything happened. */
static int advance(worker *w, lane_rt *lr, int *moved, ps_err *err)
{
    prog_lane *lane = &w->ps->lanes[lr->lane];
    for (;;) {
        double now = live_now();
        if (lr->state == L_BATCH) {
            for (int32_t i = lr->pc; i < lr->batch_end; i++)
                if (!worker_op_complete(w, &lane->ops[i]))
                    return PS_OK;
            worker_early_release(w, lr); /* before pc moves on */
            if (worker_finish_batch(w, lr, err))
                return PS_ERR;
            *moved = 1;
        }
        if (lr->state == L_WAIT) {
            prog_op *op = &lane->ops[lr->pc];
            if (!w->raised[op->msg])
                return PS_OK;
            op->t_end = now - w->t0;
            lr->pc++;
            lr->state = L_RUN;
            *moved = 1;
        }
        if (lr->state != L_RUN)
            return PS_OK;
        if (lr->pc == lane->n) {
            lr->state = L_DONE;
            *moved = 1;
            return PS_OK;
        }
        if (now - w->t0 >= w->stall_at) { /* a stall fault: no new op */
            lr->state = L_FROZEN;
            lr->t_block = now;
            return PS_OK;
        }
        prog_op *op = &lane->ops[lr->pc];
        *moved = 1;
        w->bytes.progress++;
        if (op->type != PROG_SEND || !w->outs[op->msg].posted)
            op->t_start = now - w->t0; /* an early send keeps its own */
        switch (op->type) {
        case PROG_COMPUTE:
            /* what the sockets take now goes before the compute op: a
             * send posted before it (GPipe's isend of F0 ahead of F1)
             * leaves then, as in the simulator, not once the lane next
             * blocks */
            if (w->nconn && pump(w, 0, err))
                return PS_ERR;
            op->t_start = live_now() - w->t0; /* after the copies */
            if (w->cfg->ops->compute &&
                w->cfg->ops->compute(w->cfg->ctx, w->rank, lr->lane, lr->pc, op,
                                     err))
                return PS_ERR;
            op->t_end = live_now() - w->t0;
            lr->pc++;
            break;
        case PROG_SIGNAL:
            w->raised[op->msg] = 1;
            if (w->sig_conn[op->msg] >= 0)
                worker_post_signal(w, op->msg, now);
            op->t_end = op->t_start;
            lr->pc++;
            break;
        case PROG_WAIT:
            lr->state = L_WAIT;
            lr->t_block = now;
            break;
        case PROG_SEND:
        case PROG_RECV: {
            int32_t end = lr->pc;
            while (end < lane->n - 1 && (lane->ops[end].flags & PROG_BATCH))
                end++;
            lr->batch_end = end + 1;
            for (int32_t i = lr->pc; i < lr->batch_end; i++) {
                if (lane->ops[i].type == PROG_SEND &&
                    w->outs[lane->ops[i].msg].posted)
                    continue; /* posted early (live/early.c) */
                int rc = lane->ops[i].type == PROG_SEND
                             ? worker_post_send(w, lr, i, now, err)
                             : worker_post_recv(w, lr, i, now, err);
                if (rc)
                    return PS_ERR;
            }
            if (worker_post_batch(w, lr, err))
                return PS_ERR;
            lr->state = L_BATCH;
            lr->t_block = now;
            if (worker_post_early(w, lr, now, err))
                return PS_ERR;
            break;
        }
        default: /* PROG_DELAY: a protocol's modelled latency, not TCP's */
            op->t_end = op->t_start;
            lr->pc++;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Reports: deadline and what a blocked worker waits on                */

/* "microbatch 3" or "step 2", as the engine names an op's unit. */
static void op_unit(const prog_op *op, char *buf, size_t size)
{
    if (op->mb >= 0 || op->tag < 0)
        snprintf(buf, size, "microbatch %d", (int)op->mb);
    else
        snprintf(buf, size, "%s %d",
                 op->kind == PROG_COLL && op->tag >= 0 ? "step" : "tag",
                 (int)op->tag);
}

/* The engine's words for what lane lr waits on, appended to buf. */
static int describe(const worker *w, const lane_rt *lr, char *buf, int size)
{
    const prog_lane *lane = &w->ps->lanes[lr->lane];
    char what[96], unit[48];
    if (lr->state == L_FROZEN) {
        prog_describe(&lane->ops[lr->pc], what, sizeof what);
        return snprintf(buf, (size_t)size, "rank %d stalled before %s",
                        (int)w->rank, what);
    }
    if (lr->state == L_WAIT)
        return snprintf(buf, (size_t)size, "rank %d waits on signal %d",
                        (int)w->rank, (int)lane->ops[lr->pc].msg);
    int len = 0;
    for (int32_t i = lr->pc;
         lr->state == L_BATCH && i < lr->batch_end && len < size; i++) {
        const prog_op *op = &lane->ops[i];
        if (worker_op_complete(w, op))
            continue;
        prog_describe(op, what, sizeof what);
        op_unit(op, unit, sizeof unit);
        const char *why;
        if (op->type == PROG_SEND)
            why = w->outs[op->msg].off ? "in flight" : "not yet received";
        else
            why = w->ins[op->msg].started ? "in flight" : "not yet sent";
        len += snprintf(buf + len, (size_t)(size - len),
                        "%srank %d waits on %s (%s, %s)", len ? "; " : "",
                        (int)w->rank, what, unit, why);
    }
    return len;
}

static int describe_all(const worker *w, char *buf, int size)
{
    int len = 0;
    buf[0] = '\0';
    for (int32_t l = 0; l < w->nl && len < size - 1; l++) {
        const lane_rt *lr = &w->lanes[l];
        if (lr->state == L_DONE || lr->state == L_RUN)
            continue;
        if (len)
            len += snprintf(buf + len, (size_t)(size - len), "; ");
        if (len < size - 1)
            len += describe(w, lr, buf + len, size - len);
    }
    return len;
}

/* recv_timeout passed for lr: the engine's deadline message. */
static int deadline(worker *w, const lane_rt *lr, double now, ps_err *err)
{
    const prog_lane *lane = &w->ps->lanes[lr->lane];
    const prog_op *op = NULL;
    for (int32_t i = lr->pc; i < lr->batch_end; i++) {
        const prog_op *o = &lane->ops[i];
        if (!worker_op_complete(w, o) &&
            (!op || (o->type == PROG_RECV && op->type != PROG_RECV)))
            op = o;
    }
    if (!op)
        return ps_errf(err, "deadline: rank %d waits on nothing", (int)w->rank);
    const fault_plan *fp = w->cfg->faults;
    char what[96], at[32], waited[32], unit[48];
    prog_describe(op, what, sizeof what);
    fault_format_time(now - w->t0, 1, at, sizeof at);
    fault_format_time(fp->recv_timeout, 0, waited, sizeof waited);
    op_unit(op, unit, sizeof unit);
    char buf[sizeof err->msg];
    int len = snprintf(buf, sizeof buf,
                       "deadline at t=%s: rank %d waited %s on %s (%s)", at,
                       (int)w->rank, waited, what, unit);
    fault_append_active(fp, now - w->t0, buf, len, (int)sizeof buf);
    return ps_errf(err, "%s", buf);
}

/* ------------------------------------------------------------------ */
/* One iteration                                                       */

static void reset_iteration(worker *w)
{
    for (int32_t m = 0; m < w->ps->nmsgs; m++) {
        if (!w->ins[m].direct)
            free(w->ins[m].buf);
        free(w->outs[m].owned);
        int32_t peer = w->ins[m].peer;
        memset(&w->ins[m], 0, sizeof w->ins[m]);
        memset(&w->outs[m], 0, sizeof w->outs[m]);
        w->ins[m].peer = peer;
    }
    memset(w->raised, 0, (size_t)w->ps->nsignals + 1);
    for (int32_t c = 0; c < w->nconn; c++) {
        wire_conn *cn = &w->conns[c];
        cn->head = cn->tail = NULL;
        cn->cur = NULL;
        cn->hdr_got = 0;
        cn->staged = 0;
        cn->stuck = 0;
        cn->chunk_fill = 0;
    }
    for (int32_t l = 0; l < w->nl; l++) {
        w->lanes[l].pc = 0;
        w->lanes[l].state = L_RUN;
        w->lanes[l].early_end = 0;
    }
    w->bytes = (wire_bytes){0};
    w->open_sends = 0;
    w->reported = 0;
}

/* Answers the coordinator while an iteration runs: a PROBE gets what the
 * worker waits on. Returns 0, or -1 when the coordinator is gone (the
 * worker then exits at once). */
static int serve_ctl(worker *w, int blocked)
{
    uint32_t type;
    void *buf = NULL;
    size_t cap = 0, len;
    int rc = live_ctl_recv(w->ctl, &type, &buf, &cap, &len);
    free(buf);
    if (rc || type != LIVE_PROBE)
        return -1;
    char text[3000];
    describe_all(w, text, sizeof text);
    live_blocked b = {w->bytes.progress, w->last_progress - w->t0, 0, 0};
    for (int32_t l = 0; l < w->nl; l++)
        b.stalled |= w->lanes[l].state == L_FROZEN;
    (void)blocked;
    return live_ctl_send(w->ctl, LIVE_PROBED, &b, sizeof b, text, strlen(text));
}

static int all_done(const worker *w)
{
    for (int32_t l = 0; l < w->nl; l++)
        if (w->lanes[l].state != L_DONE)
            return 0;
    return w->open_sends == 0;
}

/* Seconds until the next injected release, recv_timeout deadline or
 * quiet report, at most 50 ms. */
static double poll_wait(const worker *w, double now)
{
    double next = now + 0.05;
    const fault_plan *fp = w->cfg->faults;
    for (int32_t c = 0; c < w->nconn; c++) {
        double t = wire_next_write(&w->conns[c], &w->cfg->inject, now);
        if (t > 0 && t < next)
            next = t;
    }
    for (int32_t l = 0; fp && l < w->nl; l++)
        if (w->lanes[l].state == L_BATCH &&
            w->lanes[l].t_block + fp->recv_timeout < next)
            next = w->lanes[l].t_block + fp->recv_timeout;
    if (!w->reported && w->last_progress + QUIET_S < next)
        next = w->last_progress + QUIET_S;
    return next > now ? next - now : 0;
}

/* Waits for the sockets (and ctl) once, or only looks (block 0), and
 * serves what is ready. */
static int pump(worker *w, int block, ps_err *err)
{
    struct pollfd *pf = w->pf;
    double now = live_now();
    pf[0] = (struct pollfd){w->ctl, POLLIN, 0};
    for (int32_t c = 0; c < w->nconn; c++) {
        wire_conn *cn = &w->conns[c];
        short ev = 0;
        if (!cn->eof && (cn->cur || !cn->stuck))
            ev |= POLLIN;
        if (cn->head && wire_next_write(cn, &w->cfg->inject, now) == 0)
            ev |= POLLOUT;
        pf[c + 1] = (struct pollfd){cn->fd, ev, 0};
    }
    /* poll counts whole milliseconds; the rest of a wait (an injected
     * latency's last fraction) is slept, so that latencies are exact to
     * the scheduler's tens of microseconds */
    double wait = block ? poll_wait(w, now) : 0;
    int n = poll(pf, (nfds_t)w->nconn + 1, (int)floor(wait * 1e3));
    if (n < 0 && errno != EINTR)
        return ps_errf(err, "rank %d: poll failed", (int)w->rank);
    if (n == 0 && wait > 0 && wait < 1e-3)
        nanosleep(&(struct timespec){0, (long)(wait * 1e9)}, NULL);
    now = live_now();
    if (n > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
        serve_ctl(w, 0))
        _exit(1); /* the coordinator gave up on the run */
    for (int32_t c = 0; c < w->nconn; c++) {
        short re = n > 0 ? pf[c + 1].revents : 0;
        if ((re & (POLLIN | POLLHUP | POLLERR)) &&
            wire_read(&w->conns[c], w->ins, w->ps->nmsgs, &w->bytes, now,
                      worker_in_done, w, err))
            return PS_ERR;
    }
    /* what the reads applied may leave at once (early sends) */
    if (worker_early_update(w, err))
        return PS_ERR;
    for (int32_t c = 0; c < w->nconn; c++) {
        wire_conn *cn = &w->conns[c];
        if (cn->head && wire_write(cn, &w->cfg->inject, &w->bytes, now,
                                   worker_out_done, w, err))
            return PS_ERR;
    }
    return PS_OK;
}

/* Runs the rank's lanes once, from t0; the front end's buffers were
 * reset (prepare) when the previous iteration ended, so that the start is
 * not late by a copy of the inputs. */
static int run_iteration(worker *w, double t0, ps_err *err)
{
    reset_iteration(w);
    /* one absolute sleep to t0 (spinning would starve the other ranks of
     * a machine with fewer cores than ranks) */
    struct timespec at = {(time_t)t0, (long)((t0 - floor(t0)) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
    w->t0 = t0;
    w->last_progress = t0;
    w->seen = 0;
    struct pollfd *pf = calloc((size_t)w->nconn + 1, sizeof *pf);
    if (!pf)
        return ps_errf(err, "rank %d: out of memory", (int)w->rank);
    w->pf = pf;
    int rc = PS_OK;
    for (;;) {
        int moved;
        do {
            moved = 0;
            for (int32_t l = 0; l < w->nl && rc == PS_OK; l++)
                rc = advance(w, &w->lanes[l], &moved, err);
        } while (moved && rc == PS_OK);
        if (rc || all_done(w))
            break;
        double now = live_now();
        if (w->bytes.progress != w->seen) {
            w->seen = w->bytes.progress;
            w->last_progress = now;
            w->reported = 0;
        }
        const fault_plan *fp = w->cfg->faults;
        for (int32_t l = 0; fp && l < w->nl && rc == PS_OK; l++)
            if (w->lanes[l].state == L_BATCH &&
                now - w->lanes[l].t_block > fp->recv_timeout)
                rc = deadline(w, &w->lanes[l], now, err);
        if (rc)
            break;
        if (!w->reported && now - w->last_progress >= QUIET_S) {
            char text[3000];
            describe_all(w, text, sizeof text);
            live_blocked b = {w->bytes.progress, w->last_progress - t0, 0, 0};
            for (int32_t l = 0; l < w->nl; l++)
                b.stalled |= w->lanes[l].state == L_FROZEN;
            if (live_ctl_send(w->ctl, LIVE_BLOCKED, &b, sizeof b, text,
                              strlen(text)))
                _exit(1);
            w->reported = 1;
        }
        rc = pump(w, 1, err);
    }
    w->pf = NULL;
    free(pf);
    return rc;
}

/* LIVE_DONE: the counters, every op time of the rank's lanes, the
 * message counts. */
static int send_done(worker *w)
{
    int64_t nops = 0;
    for (int32_t l = 0; l < w->nl; l++)
        nops += w->ps->lanes[w->lanes[l].lane].n;
    double *t = malloc(((size_t)nops * 2 + 1) * sizeof *t);
    if (!t)
        return -1;
    int64_t k = 0;
    for (int32_t l = 0; l < w->nl; l++) {
        const prog_lane *lane = &w->ps->lanes[w->lanes[l].lane];
        for (int32_t i = 0; i < lane->n; i++) {
            t[k++] = lane->ops[i].t_start;
            t[k++] = lane->ops[i].t_end;
        }
    }
    live_done d = {w->iteration,  w->ncounts,     nops,
                   w->bytes.sent, w->bytes.recvd, w->bytes.header};
    size_t tb = (size_t)nops * 2 * sizeof *t;
    size_t cb = (size_t)w->ncounts * sizeof *w->counts;
    char *payload = malloc(tb + cb + 1);
    int rc = -1;
    if (payload) {
        memcpy(payload, t, tb);
        if (cb)
            memcpy(payload + tb, w->counts, cb);
        rc = live_ctl_send(w->ctl, LIVE_DONE, &d, sizeof d, payload, tb + cb);
    }
    free(payload);
    free(t);
    w->ncounts = 0;
    return rc;
}

/* The front end's buffers back to the inputs, for the next iteration. */
static int prepare(worker *w, ps_err *err)
{
    return w->cfg->ops->reset ? w->cfg->ops->reset(w->cfg->ctx, w->rank, err)
                              : PS_OK;
}

static int setup(worker *w, int listen_fd, const live_addr *addr, ps_err *err)
{
    prog_set *ps = w->ps;
    w->lanes = calloc((size_t)ps->nlanes + 1, sizeof *w->lanes);
    w->ins = calloc((size_t)ps->nmsgs + 1, sizeof *w->ins);
    w->outs = calloc((size_t)ps->nmsgs + 1, sizeof *w->outs);
    w->raised = calloc((size_t)ps->nsignals + 1, 1);
    w->sig_outs = calloc((size_t)ps->nsignals + 1, sizeof *w->sig_outs);
    if (!w->lanes || !w->ins || !w->outs || !w->raised || !w->sig_outs)
        return ps_errf(err, "out of memory");
    for (int32_t l = 0; l < ps->nlanes; l++)
        if (ps->lanes[l].rank == w->rank)
            w->lanes[w->nl++].lane = l;
    for (int32_t m = 0; m < ps->nmsgs; m++) {
        const prog_msg *pm = &ps->msgs[m];
        w->ins[m].peer = pm->recv_lane >= 0 && pm->send_lane >= 0 &&
                                 ps->lanes[pm->recv_lane].rank == w->rank
                             ? ps->lanes[pm->send_lane].rank
                             : -1;
    }
    const fault_plan *fp = w->cfg->faults;
    w->stall_at = fp && fp->rank && w->rank < fp->nranks
                      ? fp->rank[w->rank].stall_at
                      : INFINITY;
    if (wire_connect(ps, w->rank, listen_fd, addr, &w->conns, &w->nconn,
                     &w->conn_of, &w->sig_conn, err))
        return PS_ERR;
    for (int32_t c = 0; c < w->nconn; c++) {
        w->conns[c].raised = w->raised;
        w->conns[c].nsignals = ps->nsignals;
        w->conns[c].chunk_cb = worker_in_chunk;
        w->conns[c].chunk_ctx = w;
    }
    if (w->cfg->ops->setup && w->cfg->ops->setup(w->cfg->ctx, w->rank, err))
        return PS_ERR;
    return prepare(w, err);
}

/* Serves GO, PROBE and FINISH until the run ends. */
static int serve(worker *w, ps_err *err)
{
    void *buf = NULL;
    size_t cap = 0, len;
    uint32_t type;
    int rc = PS_OK;
    while (rc == PS_OK) {
        int got = live_ctl_recv(w->ctl, &type, &buf, &cap, &len);
        if (got) {
            free(buf);
            _exit(1); /* the coordinator is gone */
        }
        if (type == LIVE_PROBE) {
            live_blocked b = {w->bytes.progress, 0, 0, 0};
            if (live_ctl_send(w->ctl, LIVE_PROBED, &b, sizeof b, NULL, 0))
                _exit(1);
        } else if (type == LIVE_GO && len == sizeof(live_go)) {
            live_go g;
            memcpy(&g, buf, sizeof g);
            w->iteration = g.iteration;
            rc = run_iteration(w, g.t0, err);
            if (rc == PS_OK && send_done(w))
                rc = ps_errf(err, "rank %d: cannot report", (int)w->rank);
            /* the last iteration's buffers are the result */
            if (rc == PS_OK &&
                g.iteration + 1 < w->cfg->warmup + w->cfg->iterations)
                rc = prepare(w, err);
        } else if (type == LIVE_FINISH) {
            const void *data = NULL;
            size_t n = 0;
            if (w->cfg->ops->result &&
                w->cfg->ops->result(w->cfg->ctx, w->rank, &data, &n, err))
                rc = PS_ERR;
            else if (live_ctl_send(w->ctl, LIVE_RESULT, data, n, NULL, 0))
                _exit(1);
            else
                break;
        } else {
            rc = ps_errf(err, "rank %d: unexpected control message %u",
                         (int)w->rank, (unsigned)type);
        }
    }
    free(buf);
    return rc;
}

/* Everything a worker holds, for a worker process that goes on (a
 * rendezvous worker's scenario, live/rdv.c). */
static void release(worker *w)
{
    for (int32_t m = 0; w->ins && w->outs && m < w->ps->nmsgs; m++) {
        if (!w->ins[m].direct)
            free(w->ins[m].buf);
        free(w->outs[m].owned);
    }
    for (int32_t c = 0; c < w->nconn; c++) {
        if (w->conns[c].fd >= 0)
            close(w->conns[c].fd);
        free(w->conns[c].chunk);
    }
    free(w->lanes);
    free(w->ins);
    free(w->outs);
    free(w->raised);
    free(w->sig_outs);
    free(w->sig_conn);
    free(w->conns);
    free(w->conn_of);
    free(w->counts);
}

int live_worker_main(const live_cfg *cfg, int32_t rank, int ctl, int listen_fd,
                     const live_addr *addr)
{
    worker w = {.cfg = cfg, .ps = cfg->ps, .rank = rank, .ctl = ctl};
    ps_err err;
    int rc = setup(&w, listen_fd, addr, &err);
    if (rc == PS_OK && live_ctl_send(ctl, LIVE_READY, NULL, 0, NULL, 0))
        _exit(1);
    if (rc == PS_OK)
        rc = serve(&w, &err);
    if (rc != PS_OK)
        live_ctl_send(ctl, LIVE_FAIL, err.msg, strlen(err.msg), NULL, 0);
    if (cfg->ops->teardown)
        cfg->ops->teardown(cfg->ctx, rank);
    release(&w);
    return rc == PS_OK ? 0 : 1;
}
