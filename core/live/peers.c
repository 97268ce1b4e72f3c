/* A worker's connections to its peers: one per rank its lanes send to or
 * receive from, made through the listeners the coordinator opened before
 * the fork (the lower rank connects, the higher accepts), with
 * TCP_NODELAY, non-blocking. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "live/impl.h"
#include "live/wire.h"

typedef struct wire_set {
    const prog_set *ps;
    int32_t rank;
    wire_conn *conns;
    int32_t nconn;
    int32_t *conn_of;
} wire_set;

static int set_nodelay(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one))
        return -1;
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Which ranks `rank` talks to: a connection per peer its lanes name. */
static int find_peers(wire_set *w, ps_err *err)
{
    int32_t R = w->ps->nranks;
    w->conn_of = malloc((size_t)R * sizeof *w->conn_of);
    if (!w->conn_of)
        return ps_errf(err, "out of memory");
    for (int32_t r = 0; r < R; r++)
        w->conn_of[r] = -1;
    for (int32_t l = 0; l < w->ps->nlanes; l++) {
        const prog_lane *lane = &w->ps->lanes[l];
        if (lane->rank != w->rank)
            continue;
        for (int32_t i = 0; i < lane->n; i++) {
            const prog_op *op = &lane->ops[i];
            if ((op->type == PROG_SEND || op->type == PROG_RECV) &&
                op->peer >= 0 && op->peer < R && op->peer != w->rank &&
                w->conn_of[op->peer] < 0)
                w->conn_of[op->peer] = w->nconn++;
        }
    }
    w->conns = calloc((size_t)w->nconn + 1, sizeof *w->conns);
    if (!w->conns)
        return ps_errf(err, "out of memory");
    for (int32_t r = 0; r < R; r++)
        if (w->conn_of[r] >= 0) {
            w->conns[w->conn_of[r]].peer = r;
            w->conns[w->conn_of[r]].fd = -1;
        }
    return PS_OK;
}

/* Connects to every higher peer's listener and accepts every lower one;
 * each connection opens with the connecting rank's number. */
static int connect_peers(wire_set *w, int listen_fd, const live_addr *addr,
                         ps_err *err)
{
    int32_t expect = 0;
    for (int32_t c = 0; c < w->nconn; c++) {
        wire_conn *cn = &w->conns[c];
        if (cn->peer < w->rank) {
            expect++;
            continue;
        }
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = addr[cn->peer].port};
        a.sin_addr.s_addr = addr[cn->peer].ip;
        int32_t me = w->rank;
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) ||
            write(fd, &me, sizeof me) != (ssize_t)sizeof me) {
            if (fd >= 0)
                close(fd);
            return ps_errf(err, "rank %d: cannot connect to rank %d: %s",
                           (int)w->rank, (int)cn->peer, strerror(errno));
        }
        cn->fd = fd;
    }
    double until = live_now() + 30;
    while (expect > 0) {
        struct pollfd pf = {listen_fd, POLLIN, 0};
        if (poll(&pf, 1, 1000) <= 0) {
            if (live_now() > until)
                return ps_errf(err, "rank %d: peers did not connect",
                               (int)w->rank);
            continue;
        }
        int fd = accept(listen_fd, NULL, NULL);
        int32_t who = -1;
        if (fd < 0 || read(fd, &who, sizeof who) != (ssize_t)sizeof who ||
            who < 0 || who >= w->ps->nranks || w->conn_of[who] < 0 ||
            w->conns[w->conn_of[who]].fd >= 0) {
            if (fd >= 0)
                close(fd);
            return ps_errf(err, "rank %d: a bad peer connection", (int)w->rank);
        }
        w->conns[w->conn_of[who]].fd = fd;
        expect--;
    }
    for (int32_t c = 0; c < w->nconn; c++)
        if (set_nodelay(w->conns[c].fd))
            return ps_errf(err, "rank %d: socket options failed", (int)w->rank);
    return PS_OK;
}

int wire_connect(const prog_set *ps, int32_t rank, int listen_fd,
                 const live_addr *addr, wire_conn **conns, int32_t *nconn,
                 int32_t **conn_of, ps_err *err)
{
    wire_set w = {.ps = ps, .rank = rank};
    int rc = find_peers(&w, err);
    if (rc == PS_OK)
        rc = connect_peers(&w, listen_fd, addr, err);
    *conns = w.conns;
    *nconn = w.nconn;
    *conn_of = w.conn_of;
    return rc;
}
