/* Internal to live/: the control protocol between the coordinator
 * (live/run.c) and its workers (live/worker.c), the data connections
 * (live/wire.c) and the clock. Not a public interface (live/live.h is). */
#ifndef PS_LIVE_IMPL_H
#define PS_LIVE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "live/live.h"

/* Control messages: a header {type, length} and length bytes, over a
 * socketpair per worker. */
enum live_msg {
    /* worker -> coordinator */
    LIVE_READY = 1, /* peers connected */
    LIVE_DONE,      /* an iteration ended: live_done, op times, counts */
    LIVE_FAIL,      /* text: the run's error */
    LIVE_BLOCKED,   /* live_blocked, then text: what the lanes wait on */
    LIVE_PROBED,    /* live_blocked, then text */
    LIVE_RESULT,    /* the front end's result bytes */
    LIVE_JOIN,      /* rendezvous: {run sequence, ranks} at a live run */
    LIVE_PONG,      /* rendezvous: the worker's clock, for a LIVE_PING */
    /* coordinator -> worker */
    LIVE_GO = 32,  /* live_go */
    LIVE_PROBE,    /* empty: answer LIVE_PROBED */
    LIVE_FINISH,   /* empty: send LIVE_RESULT and exit */
    LIVE_SCENARIO, /* rendezvous: {count, name}, the text, each -D */
    LIVE_PING,     /* rendezvous: the coordinator's clock */
    LIVE_ASSIGN,   /* rendezvous: {rank or -1, ranks}, every live_addr */
};

typedef struct live_go {
    int32_t iteration; /* 0-based, warm-up included */
    int32_t pad;
    double t0; /* start, CLOCK_MONOTONIC seconds */
} live_go;

typedef struct live_done {
    int32_t iteration;
    int32_t ncounts;            /* live_count records after the op times */
    int64_t nops;               /* op time pairs that follow */
    double sent, recvd, header; /* socket bytes this iteration */
} live_done;

typedef struct live_blocked {
    uint64_t progress; /* counter of everything the worker did */
    double t;          /* its last progress, seconds since the start */
    int32_t stalled;   /* 1: a stall fault froze it */
    int32_t pad;
} live_blocked;

/* Sends one message; 0, or -1 (errno set) when the peer is gone. Blocks
 * until written (control messages are small, but LIVE_DONE may not be). */
int live_ctl_send(int fd, uint32_t type, const void *a, size_t alen,
                  const void *b, size_t blen);

/* Reads exactly n bytes from fd: 0, 1 at end of file before the first
 * byte, -1. */
int live_read_all(int fd, void *p, size_t n);

/* Receives one message into *buf (realloc'ed, *cap its size); 0 with
 * *type and *len, 1 at end of file, -1 on an error or a bad header. */
int live_ctl_recv(int fd, uint32_t *type, void **buf, size_t *cap, size_t *len);

/* CLOCK_MONOTONIC in seconds. */
double live_now(void);

/* Where rank r's worker listens for its peers: IPv4 address and port,
 * both in network byte order (port 0: no worker). */
typedef struct live_addr {
    uint32_t ip;
    uint16_t port;
    uint16_t pad;
} live_addr;

/* The worker's side of a run: connects to its peers through the listeners
 * (listen_fd its own, addr[r] every rank's), then serves the coordinator
 * on ctl until LIVE_FINISH or a failure. Returns 0 after LIVE_FINISH, or
 * the failure's exit status (the failure was reported on ctl); exits the
 * process at once when the coordinator is gone. */
int live_worker_main(const live_cfg *cfg, int32_t rank, int ctl, int listen_fd,
                     const live_addr *addr);

/* Rendezvous (live/rdv.c), the coordinator's side of a live run: the
 * first n workers become ranks rank[0..n-1] of a run of nranks ranks (the
 * others sit it out); fds[i] their control connections (still the
 * session's), offsets[i] their clocks' offsets (worker - ours), *bound the
 * alignment's error bound. Fails, ending the session, when a worker is
 * gone or reached another run. */
int live_rdv_attach(int32_t n, const int32_t *rank, int32_t nranks, int *fds,
                    double *offsets, double *bound, ps_err *err);
/* The worker's side: joins the live run of cfg (its programs are the
 * coordinator's, the scenario being the same) and serves it when given a
 * rank; res is left with worker = 1. Exits the process when the run
 * fails or the coordinator goes. */
int live_rdv_join(const live_cfg *cfg, live_result *res, ps_err *err);

#endif
