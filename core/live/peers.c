/* A worker's connections to its peers: one per pair of lanes, its own and
 * a peer's, that exchange messages or signals, made through the listeners
 * the coordinator opened before the fork (the lower rank connects, the
 * higher accepts), with TCP_NODELAY, non-blocking. */
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
    int32_t *conn_of;  /* message id -> connection, -1 */
    int32_t *sig_conn; /* signal id -> connection it is raised through */
    int32_t *sig_from, *sig_to; /* signal id -> lane raising it, lane on
                                   another rank waiting on it (-1) */
    int64_t *keys; /* connection -> its lane pair, sorted (lane_pair) */
} wire_set;

static int set_nodelay(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one))
        return -1;
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* The connection of a pair of lanes, whichever sends: the lower lane's
 * number in the high half. */
static int64_t lane_pair(int32_t a, int32_t b)
{
    return a < b ? (int64_t)a << 32 | b : (int64_t)b << 32 | a;
}

static int cmp_key(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The connection of lane pair key, or -1. */
static int32_t find_key(const wire_set *w, int64_t key)
{
    int64_t *k = bsearch(&key, w->keys, (size_t)w->nconn, sizeof key, cmp_key);
    return k ? (int32_t)(k - w->keys) : -1;
}

/* Is message m between a lane of `rank` and a lane of another rank? (A
 * message id handed out but not used has no lanes, -1.) */
static int crosses(const prog_set *ps, const prog_msg *m, int32_t rank)
{
    if (m->send_lane < 0 || m->recv_lane < 0 || m->send_lane >= ps->nlanes ||
        m->recv_lane >= ps->nlanes)
        return 0;
    int32_t s = ps->lanes[m->send_lane].rank, r = ps->lanes[m->recv_lane].rank;
    return s != r && (s == rank || r == rank);
}

/* Which lane raises each signal, and which lane of another rank waits on
 * it: the pipelined tree's free slots (coll/dbt.c), which the simulator
 * hands over at once and live mode sends as a message of its own. */
static int find_signals(wire_set *w, ps_err *err)
{
    const prog_set *ps = w->ps;
    size_t n = (size_t)ps->nsignals + 1;
    w->sig_from = malloc(n * sizeof *w->sig_from);
    w->sig_to = malloc(n * sizeof *w->sig_to);
    w->sig_conn = malloc(n * sizeof *w->sig_conn);
    if (!w->sig_from || !w->sig_to || !w->sig_conn)
        return ps_errf(err, "out of memory");
    for (size_t i = 0; i < n; i++)
        w->sig_from[i] = w->sig_to[i] = w->sig_conn[i] = -1;
    for (int32_t l = 0; l < ps->nlanes; l++)
        for (int32_t i = 0; i < ps->lanes[l].n; i++) {
            const prog_op *op = &ps->lanes[l].ops[i];
            if (op->type == PROG_SIGNAL && op->msg >= 0 &&
                op->msg < ps->nsignals)
                w->sig_from[op->msg] = l;
        }
    for (int32_t l = 0; l < ps->nlanes; l++)
        for (int32_t i = 0; i < ps->lanes[l].n; i++) {
            const prog_op *op = &ps->lanes[l].ops[i];
            if (op->type != PROG_WAIT || op->msg < 0 || op->msg >= ps->nsignals)
                continue;
            int32_t from = w->sig_from[op->msg], to = w->sig_to[op->msg];
            if (from < 0 || ps->lanes[from].rank == ps->lanes[l].rank)
                continue;
            if (to >= 0 && ps->lanes[to].rank != ps->lanes[l].rank)
                return ps_errf(err,
                               "signal %d is waited on by ranks %d and %d: "
                               "live mode hands a signal to one other rank",
                               (int)op->msg, (int)ps->lanes[to].rank,
                               (int)ps->lanes[l].rank);
            w->sig_to[op->msg] = l;
        }
    return PS_OK;
}

/* Does signal s cross from or to `rank`? */
static int sig_crosses(const wire_set *w, int32_t s)
{
    int32_t from = w->sig_from[s], to = w->sig_to[s];
    return to >= 0 && (w->ps->lanes[from].rank == w->rank ||
                       w->ps->lanes[to].rank == w->rank);
}

/* Which connections `rank` needs: one per pair of lanes, its own and a
 * peer's, that exchange messages. As the simulator's links carry each
 * lane's chunks to a peer in order on a connection of their own (NCCL's
 * FIFO per peer and channel, docs/collectives.md), messages of different
 * lanes (a tree's up and down lanes, a ring's channels) never queue
 * behind each other: a large message whose receive is not posted yet
 * blocks only its own lane pair, as it would in NCCL, instead of every
 * message between the two ranks. */
static int find_peers(wire_set *w, ps_err *err)
{
    const prog_set *ps = w->ps;
    if (find_signals(w, err))
        return PS_ERR;
    w->conn_of = malloc(((size_t)ps->nmsgs + 1) * sizeof *w->conn_of);
    w->keys = malloc(((size_t)ps->nmsgs + (size_t)ps->nsignals + 1) *
                     sizeof *w->keys);
    if (!w->conn_of || !w->keys)
        return ps_errf(err, "out of memory");
    int32_t n = 0;
    for (int32_t m = 0; m < ps->nmsgs; m++)
        if (crosses(ps, &ps->msgs[m], w->rank))
            w->keys[n++] =
                lane_pair(ps->msgs[m].send_lane, ps->msgs[m].recv_lane);
    for (int32_t sg = 0; sg < ps->nsignals; sg++)
        if (sig_crosses(w, sg))
            w->keys[n++] = lane_pair(w->sig_from[sg], w->sig_to[sg]);
    qsort(w->keys, (size_t)n, sizeof *w->keys, cmp_key);
    for (int32_t i = 0; i < n; i++) /* unique */
        if (w->nconn == 0 || w->keys[w->nconn - 1] != w->keys[i])
            w->keys[w->nconn++] = w->keys[i];
    for (int32_t m = 0; m < ps->nmsgs; m++)
        w->conn_of[m] = crosses(ps, &ps->msgs[m], w->rank)
                            ? find_key(w, lane_pair(ps->msgs[m].send_lane,
                                                    ps->msgs[m].recv_lane))
                            : -1;
    for (int32_t sg = 0; sg < ps->nsignals; sg++)
        if (sig_crosses(w, sg) && ps->lanes[w->sig_from[sg]].rank == w->rank)
            w->sig_conn[sg] =
                find_key(w, lane_pair(w->sig_from[sg], w->sig_to[sg]));
    w->conns = calloc((size_t)w->nconn + 1, sizeof *w->conns);
    if (!w->conns)
        return ps_errf(err, "out of memory");
    for (int32_t c = 0; c < w->nconn; c++) {
        int32_t a = (int32_t)(w->keys[c] >> 32),
                b = (int32_t)(w->keys[c] & 0xffffffff);
        int32_t ra = ps->lanes[a].rank;
        w->conns[c].peer = ra == w->rank ? ps->lanes[b].rank : ra;
        w->conns[c].fd = -1;
    }
    return PS_OK;
}

/* Connects to every higher peer's listener and accepts every lower one;
 * each connection opens with the connecting rank's number and its lane
 * pair. */
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
        int64_t hello[2] = {w->rank, w->keys[c]};
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) ||
            write(fd, hello, sizeof hello) != (ssize_t)sizeof hello) {
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
        int64_t hello[2] = {-1, -1};
        int32_t c = -1;
        if (fd >= 0 && live_read_all(fd, hello, sizeof hello) == 0)
            c = find_key(w, hello[1]);
        if (c < 0 || w->conns[c].peer != hello[0] || w->conns[c].fd >= 0) {
            if (fd >= 0)
                close(fd);
            return ps_errf(err, "rank %d: a bad peer connection", (int)w->rank);
        }
        w->conns[c].fd = fd;
        expect--;
    }
    for (int32_t c = 0; c < w->nconn; c++)
        if (set_nodelay(w->conns[c].fd))
            return ps_errf(err, "rank %d: socket options failed", (int)w->rank);
    return PS_OK;
}

int wire_connect(const prog_set *ps, int32_t rank, int listen_fd,
                 const live_addr *addr, wire_conn **conns, int32_t *nconn,
                 int32_t **conn_of, int32_t **sig_conn, ps_err *err)
{
    wire_set w = {.ps = ps, .rank = rank};
    int rc = find_peers(&w, err);
    if (rc == PS_OK)
        rc = connect_peers(&w, listen_fd, addr, err);
    free(w.keys);
    free(w.sig_from);
    free(w.sig_to);
    *conns = w.conns;
    *nconn = w.nconn;
    *conn_of = w.conn_of;
    *sig_conn = w.sig_conn;
    return rc;
}
