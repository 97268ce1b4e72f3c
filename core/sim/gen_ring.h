/* The ring collectives' step generator (sim/gen.h): reduce-scatter, allgather
 * and allreduce over positions 0 .. N-1, op for op what coll/algo.c's
 * ring_rs and ring_ag emit. coll/gen_coll.c sets it up; the engine's cursor
 * path calls it inline for a program of kind GEN_RING rather than through
 * gen_prog.next, since it runs once per transfer. Channel ids: position
 * i's sends to i + 1 go on channel i. */
#ifndef PS_GEN_RING_H
#define PS_GEN_RING_H

#include <stdint.h>

#include "sim/gen.h"
#include "sim/prog.h"

/* gen_prog.ctx of a GEN_RING program. */
typedef struct gen_ring {
    const int32_t *rank; /* position -> cluster rank */
    int32_t N;
    int32_t steps;     /* (rs + ag)(N - 1), reduce-scatter and allgather */
    int32_t rs;        /* 1: it starts with reduce-scatter */
    int32_t rem;       /* n % N: block b has n / N + (b < rem) elements */
    double big, small; /* bytes of a block of n / N + 1 and of n / N */
    uint8_t sflags;    /* SEND flags besides PROG_BATCH */
} gen_ring;

/* A position's cursor (zeroed before the run): the next step and the
 * block it sends at that step. */
typedef struct gen_ring_state {
    int32_t s, bs;
} gen_ring_state;

/* Moves position r's cursor on by one step: 0 when it has none left,
 * else 1 with the bytes of the step's SEND in *send and of its RECV in
 * *recv. Reduce-scatter step k sends block r - k - 1, allgather step k
 * block r - k (ring_rs, ring_ag): both r - 1 - s with s the step counted
 * over both phases, so the block moves back by one each step; the block
 * received is the one r - 1 sends, one further back. No division: it
 * runs once per step and position. */
static inline int gen_ring_step(const gen_ring *c, gen_ring_state *st,
                                int32_t r, double *send, double *recv)
{
    int32_t s = st->s, N = c->N;
    if (s >= c->steps)
        return 0;
    if (s == 0)
        st->bs = c->rs ? (r > 0 ? r - 1 : N - 1) : r;
    int32_t bs = st->bs, br = bs > 0 ? bs - 1 : N - 1;
    st->s = s + 1;
    st->bs = br;
    *send = bs < c->rem ? c->big : c->small;
    *recv = br < c->rem ? c->big : c->small;
    return 1;
}

/* gen_prog.next: step s of position r as ops, a SEND to r + 1 and a RECV
 * from r - 1, batched; position 0 emits its SEND first (the emitter walks
 * senders 0 .. N-1, and position N-1's send to 0 comes last), the others
 * their RECV. The first step writes both ops; later steps change only
 * their bytes and step tags in place (sim/gen.h: ops holds the previous
 * step). */
static inline int gen_ring_next(const gen_prog *g, int32_t r, void *state,
                                prog_op *ops)
{
    const gen_ring *c = g->ctx;
    gen_ring_state *st = state;
    int32_t s = st->s, N = c->N;
    prog_op *send = &ops[r != 0], *recv = &ops[r == 0];
    if (s == 0) {
        int32_t prev = r > 0 ? r - 1 : N - 1, next = r + 1 < N ? r + 1 : 0;
        *send = (prog_op){.msg = r,
                          .peer = c->rank[next],
                          .mb = -1,
                          .type = PROG_SEND,
                          .kind = PROG_COLL,
                          .flags = c->sflags};
        *recv = (prog_op){.msg = prev,
                          .peer = c->rank[prev],
                          .mb = -1,
                          .type = PROG_RECV,
                          .kind = PROG_COLL};
        ops[0].flags |= PROG_BATCH;
    }
    if (!gen_ring_step(c, st, r, &send->bytes, &recv->bytes))
        return 0;
    send->tag = recv->tag = s;
    return 2;
}

#endif
