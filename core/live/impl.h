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
    /* coordinator -> worker */
    LIVE_GO = 32, /* live_go */
    LIVE_PROBE,   /* empty: answer LIVE_PROBED */
    LIVE_FINISH,  /* empty: send LIVE_RESULT and exit */
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

/* Receives one message into *buf (realloc'ed, *cap its size); 0 with
 * *type and *len, 1 at end of file, -1 on an error or a bad header. */
int live_ctl_recv(int fd, uint32_t *type, void **buf, size_t *cap, size_t *len);

/* CLOCK_MONOTONIC in seconds. */
double live_now(void);

/* The worker's side of a run: connects to its peers through the listeners
 * (listen_fd its own, ports[r] every rank's, 0 for ranks without a
 * worker), then serves the coordinator on ctl until LIVE_FINISH or a
 * failure. Returns the process's exit status. */
int live_worker_main(const live_cfg *cfg, int32_t rank, int ctl, int listen_fd,
                     const uint16_t *ports);

#endif
