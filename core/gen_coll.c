/* Collective generators: ring reduce-scatter / allgather / allreduce over
 * positions 0 .. N-1, op for op what coll_algo.c's ring_rs and ring_ag
 * emit (same order in each lane, same batches, flags, tags and bytes),
 * from a lane's op count alone. Channel ids: position i's sends to i + 1
 * go on channel i. Also gen.h's test-mode switch. */
#include "gen_coll.h"

#include <stdlib.h>
#include <string.h>

#include "gen.h"

int gen_force_array(void)
{
    static int known = -1;
    if (known < 0) {
        const char *v = getenv("PIPESIM_ARRAY");
        known = v && *v && strcmp(v, "0") != 0;
    }
    return known;
}

typedef struct ring {
    const int32_t *rank;
    int32_t N;
    int64_t n;
    int rs, ag;        /* phases it runs */
    int32_t steps;     /* (rs + ag)(N - 1) */
    int64_t q, rem;    /* n / N, n % N: block b has q + (b < rem) elements */
    double big, small; /* bytes of a block of q + 1 and of q elements */
    uint8_t sflags;    /* SEND flags besides PROG_BATCH */
} ring;

/* A position's cursor (zeroed before the run): the next step and the
 * block it sends at that step. */
typedef struct ring_state {
    int32_t s, bs;
} ring_state;

static int32_t ring_rank(const gen_prog *g, int32_t lane)
{
    return ((const ring *)g->ctx)->rank[lane];
}

/* Step s of position r: a SEND to r + 1 and a RECV from r - 1, batched;
 * position 0 emits its SEND first (the emitter walks senders 0 .. N-1,
 * and position N-1's send to 0 comes last), the others their RECV.
 * Reduce-scatter step k sends block r - k - 1, allgather step k block
 * r - k (ring_rs, ring_ag): both r - 1 - s with s the step counted over
 * both phases, so the block moves back by one each step; the block
 * received is the one r - 1 sends, one further back. No division on this
 * path: it runs once per step and lane. The first step writes both ops;
 * later steps change only their bytes and step tags in place (gen.h:
 * ops holds the previous step). */
static int ring_next(const gen_prog *g, int32_t r, void *state, prog_op *ops)
{
    const ring *c = g->ctx;
    ring_state *st = state;
    int32_t s = st->s, N = c->N;
    if (s >= c->steps)
        return 0;
    prog_op *send = &ops[r != 0], *recv = &ops[r == 0];
    if (s == 0) {
        int32_t prev = r > 0 ? r - 1 : N - 1, next = r + 1 < N ? r + 1 : 0;
        st->bs = c->rs ? prev : r;
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
    int32_t bs = st->bs, br = bs > 0 ? bs - 1 : N - 1;
    st->s = s + 1;
    st->bs = br;
    send->bytes = bs < c->rem ? c->big : c->small;
    send->tag = s;
    recv->bytes = br < c->rem ? c->big : c->small;
    recv->tag = s;
    return 2;
}

int gen_coll_applies(enum coll_op op, int algo, int32_t channels, int32_t N,
                     int64_t n)
{
    if (gen_force_array() || N < 2 || n <= 0)
        return 0;
    return algo == COLL_RING && channels == 1 &&
           (op == COLL_ALLREDUCE || op == COLL_REDUCE_SCATTER ||
            op == COLL_ALLGATHER);
}

int gen_coll_run(enum coll_op op, int algo, const int32_t *rank, int32_t N,
                 int64_t n, int32_t slots, enum eng_p2p p2p, net *nw,
                 eng_sim *eng, eng_result *er, double *sent, int64_t *transfers,
                 int32_t *steps, ps_err *err)
{
    (void)algo; /* the ring, the only one gen_coll_applies accepts */
    ring c = {.rank = rank,
              .N = N,
              .n = n,
              .rs = op != COLL_ALLGATHER,
              .ag = op != COLL_REDUCE_SCATTER,
              .sflags = (uint8_t)(slots > 1 ? PROG_EARLY | PROG_NOWAIT : 0)};
    c.steps = (c.rs + c.ag) * (N - 1);
    c.q = n / N;
    c.rem = n % N;
    c.big = (double)(c.q + 1) * 4;
    c.small = (double)c.q * 4;
    gen_prog g = {net_ranks(nw), N,         N,  2, sizeof(ring_state),
                  ring_rank,     ring_next, &c, 1};
    int rc = eng_run_gen(eng, &g, nw, p2p, er, err);
    if (rc)
        return rc;
    /* position r sends every block but its own (reduce-scatter) and every
     * block but r + 1's (allgather): whole numbers of bytes, so the sum is
     * exact in any order and equals the emitter's transfer by transfer */
    for (int32_t r = 0; r < N; r++) {
        int32_t own = r, next = (r + 1) % N;
        int64_t el = 0;
        if (c.rs)
            el += n - (n / N + (own < n % N));
        if (c.ag)
            el += n - (n / N + (next < n % N));
        sent[r] = (double)el * 4;
    }
    *transfers = (int64_t)N * c.steps;
    *steps = c.steps;
    return PS_OK;
}
