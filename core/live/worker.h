/* Internal to live/: a worker's state (live/worker.c runs its lanes,
 * live/post.c posts their sends and receives and completes them). */
#ifndef PS_LIVE_WORKER_H
#define PS_LIVE_WORKER_H

#include <stdint.h>

#include "live/impl.h"
#include "live/wire.h"

enum lane_state { L_RUN, L_BATCH, L_WAIT, L_FROZEN, L_DONE };

typedef struct lane_rt {
    int32_t lane; /* in ps */
    int32_t pc, batch_end;
    int32_t early_end; /* the next batch's end when its sends were posted
                          early (live/early.c), else 0 */
    int state;
    double t_block; /* when it began to wait */
} lane_rt;

typedef struct worker {
    const live_cfg *cfg;
    prog_set *ps;
    int32_t rank;
    int ctl;
    lane_rt *lanes;
    int32_t nl;
    wire_conn *conns;
    int32_t nconn;
    int32_t *conn_of;   /* message id -> connection (its lane pair's), -1 */
    wire_in *ins;       /* by message id */
    wire_out *outs;     /* by message id */
    uint8_t *raised;    /* by signal id */
    int32_t *sig_conn;  /* signal id -> connection to the rank waiting on
                           it, -1 (live/peers.c) */
    wire_out *sig_outs; /* by signal id: raised for another rank */
    wire_bytes bytes;
    struct pollfd *pf; /* the poll set of the iteration under way */
    double t0;
    double stall_at; /* INFINITY: never */
    int32_t iteration;
    int64_t open_sends; /* posted, not yet all taken by the kernel */
    uint64_t seen;      /* progress count at the last look */
    double last_progress;
    int reported; /* LIVE_BLOCKED sent since the last progress */
    live_count *counts;
    int32_t ncounts, counts_cap;
    char msg[4096]; /* the failure */
} worker;

/* live/post.c: counting, posting and completing a lane's messages */

/* wire_write's and wire_read's callbacks: a send taken, a receive read */
void worker_out_done(void *ctx, wire_out *o);
void worker_in_done(void *ctx, wire_in *in);
/* wire_conn's chunk_cb: a streamed receive's bytes to the front end */
int worker_in_chunk(void *ctx, wire_in *in, size_t off, const char *data,
                    size_t len, ps_err *err);
/* Posts op i of lr's batch, a SEND or a RECV, at time now. */
int worker_post_send(worker *w, lane_rt *lr, int32_t i, double now,
                     ps_err *err);
int worker_post_recv(worker *w, lane_rt *lr, int32_t i, double now,
                     ps_err *err);
/* Every op of lr's batch is posted: each receive is streamed or not
 * (live_ops.recv_stream) and handed to its connection. */
int worker_post_batch(worker *w, lane_rt *lr, ps_err *err);
/* Raises signal sg for the lane of another rank that waits on it. */
void worker_post_signal(worker *w, int32_t sg, double now);
/* Is op (of a posted batch) complete? */
int worker_op_complete(const worker *w, const prog_op *op);
/* lr's batch is complete: its receives handed over in op order. */
int worker_finish_batch(worker *w, lane_rt *lr, ps_err *err);

/* live/early.c: the next batch's sends posted while this one's
 * streamed receives still arrive, each byte leaving once it is final */

/* lr's batch was just posted: posts the next batch's sends early where
 * the front end streams receives (live_ops.recv_stream). */
int worker_post_early(worker *w, lane_rt *lr, double now, ps_err *err);
/* How much of each early send may leave, after reads applied bytes. */
int worker_early_update(worker *w, ps_err *err);
/* lr's batch completed (before worker_finish_batch moves pc on): its
 * early sends may leave whole. */
void worker_early_release(worker *w, lane_rt *lr);

#endif
