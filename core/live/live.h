/* Live mode: the second executor of per-rank programs (DESIGN.md). The
 * programs the generators made for the engine run for real: one OS process
 * per rank (a worker), one TCP connection per communicating pair, real
 * bytes on the wire, real computation through callbacks that the front end
 * of the run supplies (coll/live.c moves float32 arrays, step/pipe_live.c
 * runs an MLP). Nothing here knows a schedule or a collective algorithm.
 *
 * A run: the coordinator (the calling process) opens one listening socket
 * per rank, forks the workers (each inherits the programs and the front
 * end's context, so nothing is serialised), and each worker connects to
 * the peers its programs name. Then, per iteration, the coordinator sends
 * GO with a start time on CLOCK_MONOTONIC (the clock every process of one
 * host shares, so the clocks are aligned exactly; see docs/live.md), the
 * workers run their lanes and send back every op's start and end, and
 * their socket byte counters. Warm-up iterations are run and dropped.
 *
 * Semantics of a worker's lanes (as the engine's, sim/eng.h): a COMPUTE op
 * runs the front end's compute callback on the worker's one thread; a
 * batch of SEND/RECV ops is posted at once and the lane goes on when its
 * receives have completed and its sends (but PROG_NOWAIT ones) have been
 * taken by the kernel; SIGNAL/WAIT order a rank's lanes; DELAY ops (an
 * NCCL protocol's modelled latency) are not executed: TCP has its own.
 * Messages on one connection go in the order their sends were posted; a
 * message whose receive is not posted yet is held by the receiver in up to
 * LIVE_STAGING bytes per connection, beyond which it stays in the kernel's
 * socket buffers and the sender blocks, as on any real wire: a program
 * that needs more buffering deadlocks, and the watchdog names it in the
 * words of the engine's rendezvous report.
 *
 * Bounded: a stop (base/limit.h: SIGINT, SIGTERM, --timeout) kills every
 * worker and waits for it; a worker that dies fails the run naming its
 * rank; recv_timeout makes a waiting worker fail with the engine's
 * deadline message; a worker whose parent dies exits (PR_SET_PDEATHSIG). */
#ifndef PS_LIVE_H
#define PS_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "sim/fault.h"
#include "sim/prog.h"

/* Bytes a receiver holds of messages whose receive it has not posted,
 * per connection, beyond the kernel's socket buffers. */
#define LIVE_STAGING (256 * 1024)

/* What a worker does with its data, supplied by the run's front end. The
 * callbacks run in the worker processes (forked after the front end built
 * ctx), one thread each; `rank` is the cluster rank of the worker, `lane`
 * and `index` locate the op in the program set. Each returns 0, or fills
 * err and returns PS_ERR, which fails the run with that message. */
typedef struct live_ops {
    /* Once, in the worker, before its first iteration (may be NULL). */
    int (*setup)(void *ctx, int32_t rank, ps_err *err);
    /* Before each iteration: put the rank's buffers back to the inputs. */
    int (*reset)(void *ctx, int32_t rank, ps_err *err);
    /* A SEND is posted: *data and *len are its payload, which must stay
     * unchanged until the batch that holds the send completes (a
     * PROG_NOWAIT send is copied by the executor at once). */
    int (*send_data)(void *ctx, int32_t rank, int32_t lane, int32_t index,
                     const prog_op *op, const void **data, size_t *len,
                     ps_err *err);
    /* A RECV is posted: the bytes it expects (the sender's len). */
    int (*recv_len)(void *ctx, int32_t rank, int32_t lane, int32_t index,
                    const prog_op *op, size_t *len, ps_err *err);
    /* The batch holding a RECV completed: its bytes, in op order within
     * the batch and after every send of the batch read its data. */
    int (*recv_done)(void *ctx, int32_t rank, int32_t lane, int32_t index,
                     const prog_op *op, const void *data, size_t len,
                     ps_err *err);
    /* Where recv_done will write the RECV's bytes (may be NULL). With it,
     * a PROG_NOWAIT send is not copied when posted: the executor copies
     * it only if a receive is about to overwrite its bytes while they are
     * still being sent. Without it, every such send is copied. */
    int (*recv_target)(void *ctx, int32_t rank, int32_t lane, int32_t index,
                       const prog_op *op, const void **dst, size_t *len,
                       ps_err *err);
    /* Optional (may be NULL; needs recv_target): how the RECV's bytes may
     * be applied as they arrive instead of at the end of the batch, as
     * gloo reduces from its receive buffer: *direct, a buffer to read
     * them straight into (a plain copy), or *unit, the granule in bytes
     * (1 to 64) that recv_chunk applies, or neither (recv_done, as
     * usual). Asked once the batch is posted, for a receive whose message
     * has not started arriving and whose target no other receive of the
     * batch overlaps; the sends still under way whose bytes it overwrites
     * are copied first, so that the outcome is recv_done's. */
    int (*recv_stream)(void *ctx, int32_t rank, int32_t lane, int32_t index,
                       const prog_op *op, void **direct, size_t *unit,
                       ps_err *err);
    /* A streamed RECV's bytes [off, off + len) of its message, len a
     * multiple of the unit (but maybe the message's last chunk). */
    int (*recv_chunk)(void *ctx, int32_t rank, int32_t lane, int32_t index,
                      const prog_op *op, size_t off, const void *data,
                      size_t len, ps_err *err);
    /* A COMPUTE op (may be NULL: compute ops take no time). */
    int (*compute)(void *ctx, int32_t rank, int32_t lane, int32_t index,
                   const prog_op *op, ps_err *err);
    /* After the last iteration: bytes to hand back to the coordinator
     * (owned by ctx; may be NULL). */
    int (*result)(void *ctx, int32_t rank, const void **data, size_t *len,
                  ps_err *err);
    /* Frees what setup and the run made in the worker (may be NULL): a
     * rendezvous worker's process goes on after the run. */
    void (*teardown)(void *ctx, int32_t rank);
} live_ops;

/* Test-only faults of the transport, to check calibration: every message
 * is delayed by `latency` seconds before its first byte leaves, and its
 * bytes are paced to `bandwidth` bytes per second (0: not paced). */
typedef struct live_inject {
    double latency, bandwidth;
} live_inject;

typedef struct live_cfg {
    prog_set *ps; /* sealed programs; live_run writes the measured op
                     times of the median iteration into them */
    const live_ops *ops;
    void *ctx;
    int iterations; /* measured, >= 1 */
    int warmup;     /* run first and dropped, >= 0 */
    /* stall faults (others are refused) and recv_timeout; NULL: none */
    const fault_plan *faults;
    /* seconds without progress anywhere before a deadlock is declared;
     * 0: the default, 2 s */
    double watchdog;
    live_inject inject;
} live_cfg;

/* One message as the socket counted it, for the byte log: at the end of
 * a send (its last byte taken by the kernel) or a receive (its last byte
 * read), the rank's totals so far. */
typedef struct live_count {
    int32_t iteration; /* 0-based, warm-up iterations excluded */
    int32_t rank, peer, msg, tag, mb;
    int32_t send; /* 1 send, 0 receive */
    uint8_t kind; /* enum prog_kind of the op */
    double bytes; /* the message's payload */
    double sent;  /* payload bytes this rank's sockets sent so far in the
                     iteration */
    double recvd; /* and received */
    double t;     /* seconds since the iteration's start */
} live_count;

typedef struct live_result {
    int32_t iterations;
    double *times;       /* per measured iteration: the latest op end over
                            every rank, from the common start */
    double median;       /* of times (the mean of the middle two when even) */
    int32_t median_iter; /* the iteration whose op times ps holds */
    /* per cluster rank (ps->nranks), one iteration (the median one): the
     * payload bytes its sockets sent and received, and header bytes */
    double *bytes_sent, *bytes_recvd, *header_bytes;
    int32_t nranks; /* entries of data and data_len */
    /* per cluster rank: what ops->result handed back (NULL: nothing) */
    void **data;
    size_t *data_len;
    live_count *counts; /* every measured iteration's messages */
    int64_t ncounts;
    double clock_error; /* bound on the misalignment of the ranks' clocks,
                           seconds (0: one host, one clock) */
    int worker;         /* 1: this process was one rendezvous worker of the run:
                           nothing else is filled in */
} live_result;

/* Runs cfg->ps for real. Fails, with nothing to free, on a worker's
 * failure (its message, naming the rank), a deadlock (the engine's
 * wording), a deadline (recv_timeout), a worker that dies (its rank and
 * how), a stop (limit_stopped(), "interrupted" or the limit's message), or
 * out of memory. Every worker process has exited when it returns. */
int live_run(const live_cfg *cfg, live_result *res, ps_err *err);

/* --- rendezvous: workers from other processes or hosts (live/rdv.c) --- */

/* The coordinator (pipesim run --rendezvous HOST:PORT --workers W):
 * listens on HOST:PORT, waits up to timeout seconds (or a stop) for W
 * workers and sends each the scenario (its name, text and -D arguments);
 * every following live_run uses them instead of forking. */
int live_rdv_serve(const char *hostport, int workers, double timeout,
                   const char *name, const char *text, size_t len,
                   const char *const *defs, int ndefs, ps_err *err);

/* What a worker receives: the scenario to run. */
typedef struct live_job {
    char *name, *text;
    size_t len;
    char **defs;
    int ndefs;
} live_job;

/* The worker (pipesim worker --rendezvous HOST:PORT): connects (retrying
 * for up to timeout seconds: the coordinator may start later) and
 * receives the scenario into *job (live_job_free). From then on every
 * live_run of this process joins the coordinator's run. */
int live_rdv_connect(const char *hostport, double timeout, live_job *job,
                     ps_err *err);
void live_job_free(live_job *job);

/* 0 none, 1 this process coordinates rendezvous workers, 2 it is one. */
int live_rdv_active(void);
/* Closes the session: its workers exit. */
void live_rdv_end(void);

/* CLOCK_MONOTONIC in seconds: the clock live mode measures with. */
double live_clock(void);

/* Frees what live_run allocated in res; harmless on a zeroed or freed
 * res. */
void live_result_free(live_result *res);

#endif
