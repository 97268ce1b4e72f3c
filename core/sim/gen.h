/* Generated programs: lanes whose ops are computed on demand from O(1)
 * state instead of being stored (issue 12). The engine's cursor path
 * (eng_run_gen) asks a lane for its next op only when the lane reaches it,
 * so a run holds per lane a few ops and a cursor, and per message in
 * flight one record, however many ops the program has.
 *
 * An op is the prog_op of sim/prog.h with one difference: a SEND or RECV
 * carries in `msg` a channel id (0 .. nchannels - 1) chosen by the
 * generator, the same on both sides, instead of a message id. Messages
 * match by channel sequence numbers: the k-th SEND posted on a channel
 * meets the k-th RECV posted on it. There is no message table and no
 * prog_seal pass; a generator is correct by construction (tests compare
 * each one with the array its module lowers, op for op and time for time).
 * SIGNAL and WAIT are not supported. A batch (PROG_BATCH) holds at most
 * max_batch ops. A channel joins one rank to one other: every SEND on it
 * goes from the same rank to the same peer.
 *
 * Generators of the built-in collectives live in coll/gen_coll.c, of the
 * built-in pipeline schedules in sched/gen_pipe.c. */
#ifndef PS_GEN_H
#define PS_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "sim/prog.h"

typedef struct gen_prog gen_prog;

/* What the engine may assume of a generator beyond this contract. */
enum gen_kind {
    GEN_ANY = 0, /* next is called through its pointer */
    GEN_RING = 1 /* next is gen_ring_next and ctx a gen_ring (sim/gen_ring.h):
                    the engine calls it inline */
};

struct gen_prog {
    int32_t nranks;     /* ranks of the network it runs on */
    int32_t nlanes;     /* lanes 0 .. nlanes - 1 */
    int32_t nchannels;  /* channel ids of its SEND/RECV ops */
    int32_t max_batch;  /* most ops in one batch (>= 1) */
    size_t state_bytes; /* cursor state per lane, zeroed before the run */
    /* the rank lane l runs on */
    int32_t (*rank)(const gen_prog *g, int32_t lane);
    /* writes lane's next compute op, or its next batch of SEND/RECV ops
     * (the last without PROG_BATCH, at most max_batch), to ops and returns
     * how many, or returns 0 when the lane has no more; state is the
     * lane's cursor. One call per batch: it runs once per op or two. ops
     * holds what this lane's previous call wrote (zeroes before the
     * first), changed by the engine in t_start and t_end only, so a
     * generator may rewrite just the fields that change. */
    int (*next)(const gen_prog *g, int32_t lane, void *state, prog_op *ops);
    const void *ctx; /* the generator's parameters */
    /* 1: the engine does not check each batch against the contract above
     * (lone compute op or SEND/RECV, channel range, PROG_BATCH marks, a
     * channel's two ranks); for the built-in generators, which test_gen
     * compares op for op with the arrays their modules lower. 0 (any
     * other generator): every batch is checked, and a broken one fails
     * the run naming its rank and op. */
    int trusted;
    int kind; /* enum gen_kind */
};

/* 1 when PIPESIM_ARRAY is set to a value other than "" or "0": the test
 * mode that runs every program as a stored array, to compare with the
 * generators. Read once per process. */
int gen_force_array(void);

#endif
