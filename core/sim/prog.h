/* Programs: what each rank executes, as ordered lists of ops.
 *
 * A program set holds lanes; a lane is one in-order instruction stream of one
 * rank (a pipeline rank has one lane; data parallelism adds a communication
 * lane per rank). Schedules and collective algorithms are generators of
 * program sets; the engine executes them without knowing who generated them.
 *
 * Point-to-point ops are paired by message id: every message has exactly one
 * SEND and one RECV, so the engine matches them with an array lookup instead
 * of a hash on the per-event path. Consecutive SEND/RECV ops whose flags have
 * PROG_BATCH set are posted together with the op that follows them and the
 * lane waits for all of them (Megatron-LM's batch_isend_irecv + wait). */
#ifndef PS_PROG_H
#define PS_PROG_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

enum prog_type {
    PROG_COMPUTE, /* occupies the rank's device for `seconds` */
    PROG_SEND,    /* sends `bytes` of message `msg` to rank `peer` */
    PROG_RECV,    /* receives message `msg` from rank `peer` */
    PROG_SIGNAL,  /* raises signal `msg` (instant) */
    PROG_WAIT,    /* blocks the lane until signal `msg` has been raised */
    PROG_DELAY    /* holds the lane for `seconds` without the device: a
                     fixed latency (a collective protocol's, coll/coll.c) */
};

/* Compute kinds; SEND/RECV reuse them to say what is moved (F: activation,
 * B: gradient of an activation, COLL: collective payload). An overlapped
 * forward-backward (DualPipe's F&B, sched/sched.h) is two back-to-back ops:
 * FB_F, the forward's share (allocates its activations at the start), and
 * FB_B, the backward's share (frees at the end). */
enum prog_kind {
    PROG_F,
    PROG_B,
    PROG_W,
    PROG_R,
    PROG_OPT,
    PROG_COLL,
    PROG_FB_F,
    PROG_FB_B
};

#define PROG_BATCH 0x1u /* SEND/RECV: posted together with the next op */
#define PROG_NOWAIT                                                            \
    0x2u /* SEND: the lane does not wait for it (an isend                      \
            waited on only at the end, as PyTorch's                            \
            ScheduleGPipe does); the transfer still starts                     \
            only when the receive is posted (rendezvous) */
#define PROG_EARLY                                                             \
    0x4u /* SEND: its receive was posted ahead (PyTorch's                      \
            _PipelineScheduleRuntime irecvs before it needs the                \
            data): the transfer starts when the send is posted,                \
            even under rendezvous */

/* 48 bytes: fields that no op type uses together share storage (C11
 * anonymous unions), since generation and the engine stream millions of
 * ops through memory. Read a field only on the op types it is listed for;
 * the constructors below set every field that applies. */
typedef struct prog_op {
    double t_start; /* set by the engine: COMPUTE run start; SEND transfer
                       start; RECV post time */
    double t_end;   /* set by the engine: COMPUTE end; SEND transfer end;
                       RECV completion */
    union {
        double seconds; /* COMPUTE: duration */
        double bytes;   /* SEND/RECV: payload */
    };
    union {
        double mem; /* COMPUTE: memory change; > 0 allocated when the op
                       starts, < 0 freed when it ends */
        struct {
            int32_t msg;  /* SEND/RECV: message id; SIGNAL/WAIT: signal id */
            int32_t peer; /* SEND/RECV: the other rank */
        };
    };
    union {
        int32_t stage; /* COMPUTE: model stage (chunk * p + pipeline rank),
                          -1 if none */
        int32_t tag;   /* SEND/RECV: free label: collective step, bucket
                          id, ...; -1 if none */
    };
    int32_t mb;    /* microbatch, -1 if none */
    int16_t chunk; /* model chunk on its rank, 0 without virtual stages */
    uint8_t type;  /* enum prog_type */
    uint8_t kind;  /* enum prog_kind */
    uint8_t flags; /* PROG_BATCH, PROG_NOWAIT, PROG_EARLY */
} prog_op;

typedef struct prog_lane {
    int32_t rank;
    int32_t n, cap;
    uint8_t in_arena; /* ops is a slice of the set's arena (prog_reserve),
                         not a block of its own; PROG_ALIAS: a view of
                         another lane's (prog_alias_lane) */
    prog_op *ops;
} prog_lane;

#define PROG_ALIAS 2

/* Where the SEND and RECV of one message are: (lane, index) pairs. */
typedef struct prog_msg {
    int32_t send_lane, send_op;
    int32_t recv_lane, recv_op;
} prog_msg;

typedef struct prog_set {
    int32_t nranks;
    int32_t nlanes;
    size_t lanes_cap;
    prog_lane *lanes;
    int32_t nmsgs;    /* message ids handed out so far */
    int32_t nsignals; /* signal ids handed out so far */
    prog_msg *msgs;   /* nmsgs entries, valid after prog_seal */
    int32_t msgs_cap; /* entries allocated in msgs, kept between runs */
    prog_op *arena;   /* one block sliced into lanes by prog_reserve */
    int64_t arena_cap;
    /* replica folding (par/fold.h): a message's two sides agree on ranks
     * through image (nranks entries, borrowed; NULL: as they are): a send
     * to a rank of an unsimulated replica is received by its image */
    const int32_t *image;
} prog_set;

/* Creates an empty set for nranks ranks. Returns NULL when out of memory.
 * prog_free(NULL) is a no-op. */
prog_set *prog_new(int32_t nranks);
void prog_free(prog_set *ps);

/* Empties the set for reuse with nranks ranks, keeping allocations, so that
 * sweeps do not reallocate per run. */
void prog_reset(prog_set *ps, int32_t nranks);

/* Adds a lane for rank and returns its index, or -1 when out of memory. */
int32_t prog_add_lane(prog_set *ps, int32_t rank);

/* After an allocation for ps's ops failed at the memory budget: notes
 * for the stop's message (limit_note_need) what the set's ops, plus more
 * not yet in it, need at least as arrays. A no-op for any other stop. */
void prog_note_need(const prog_set *ps, int64_t more);

/* For generators that know their sizes (a counting pass): gives each lane
 * l < nlanes, which must be empty, room for exactly count[l] ops, sliced
 * from one block that is kept between runs and asks the OS for huge pages,
 * so that streaming millions of ops does not miss the TLB at every lane
 * switch. prog_push still grows a lane beyond it. Returns 0, or -1 when
 * out of memory (the lanes are then as before). */
int prog_reserve(prog_set *ps, const int64_t *count);

/* Makes room for extra more ops in lane (keeping its ops, leaving the
 * arena if it must move). Returns 0, or -1 when out of memory. */
int prog_grow(prog_set *ps, int32_t lane, int64_t extra);

/* Appends a copy of op to lane. Returns 0, or -1 when out of memory. */
int prog_push(prog_set *ps, int32_t lane, const prog_op *op);

/* Drops lane's first k ops (replica folding's streaming check, par/fold.h,
 * once it compared them): the rest move to the front, and a lane left
 * empty gives its block back. */
void prog_drop_front(prog_set *ps, int32_t lane, int32_t k);

/* Makes lane a view of n ops owned elsewhere (another lane's, which must
 * outlive its use): never freed or grown in place through this lane. */
void prog_alias_lane(prog_set *ps, int32_t lane, prog_op *ops, int32_t n);

/* Hands out a fresh message id / signal id. */
static inline int32_t prog_new_msg(prog_set *ps)
{
    return ps->nmsgs++;
}
static inline int32_t prog_new_signal(prog_set *ps)
{
    return ps->nsignals++;
}

/* Convenience constructors for the common ops. */
prog_op prog_compute(enum prog_kind kind, int32_t stage, int16_t chunk,
                     int32_t mb, double seconds, double mem);
prog_op prog_delay(enum prog_kind kind, int32_t tag, double seconds);
/* A PROG_SIGNAL raising, or a PROG_WAIT on, signal `id` (no peer, stage,
 * microbatch or tag). */
prog_op prog_signal(enum prog_type type, int32_t id);
prog_op prog_send(int32_t peer, int32_t msg, double bytes, enum prog_kind kind,
                  int32_t mb, unsigned flags);
prog_op prog_recv(int32_t peer, int32_t msg, double bytes, enum prog_kind kind,
                  int32_t mb, unsigned flags);

/* Builds the message table and checks the set: every message has exactly
 * one SEND and one RECV, the ranks agree (the SEND's peer is the RECV's rank
 * and back), byte counts agree, a batch does not end the lane, and every
 * WAIT has a SIGNAL. On failure the message names the rank and message. */
int prog_seal(prog_set *ps, ps_err *err);

/* Allocates a block for an array of millions of entries that is visited in
 * an order jumping between far-apart parts, one lane after another (ops,
 * per-message tables): with 4 KiB pages nearly every such access misses the
 * TLB, which is expensive under virtualisation. Where transparent huge
 * pages are on request (Linux, madvise mode) it asks for them; elsewhere it
 * is malloc. It counts against --max-memory: free with limit_free
 * (base/limit.h); NULL when out of memory or over the budget. */
void *prog_big_alloc(size_t bytes);

/* Total ops over all lanes. */
int64_t prog_count(const prog_set *ps);

/* Writes a short description of op such as "F3.c1", "send to rank 2 (B5)"
 * into buf for reports and error messages. */
void prog_describe(const prog_op *op, char *buf, int size);

/* The one-letter name of a compute kind: 'F', 'B', 'W', 'R', 'O', 'C'. */
char prog_kind_letter(enum prog_kind kind);

#endif
