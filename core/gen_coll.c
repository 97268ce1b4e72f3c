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
    int rs, ag;     /* phases it runs */
    int32_t steps;  /* (rs + ag)(N - 1) */
    int64_t q, rem; /* n / N, n % N: block b has q + (b < rem) elements */
    uint8_t sflags; /* SEND flags besides PROG_BATCH */
} ring;

static int32_t ring_rank(const gen_prog *g, int32_t lane)
{
    return ((const ring *)g->ctx)->rank[lane];
}

static inline int32_t mod(int64_t a, int32_t m)
{
    return (int32_t)((a % m + m) % m);
}

/* Step s of position r: a SEND to r + 1 and a RECV from r - 1, batched;
 * position 0 emits its SEND first (the emitter walks senders 0 .. N-1,
 * and position N-1's send to 0 comes last), the others their RECV.
 * Reduce-scatter step k sends block r - k - 1, allgather step k block
 * r - k (ring_rs, ring_ag); the block received is the one r - 1 sends. */
static int ring_next(const gen_prog *g, int32_t r, void *state, prog_op *ops)
{
    const ring *c = g->ctx;
    int32_t *st = state;
    int32_t s = *st;
    if (s >= c->steps)
        return 0;
    *st = s + 1;
    /* no division on this path: it runs once per step and lane */
    int32_t N = c->N;
    int rs = c->rs && s < N - 1;
    int32_t k = rs ? s : s - (c->rs ? N - 1 : 0);
    int32_t prev = r > 0 ? r - 1 : N - 1, next = r + 1 < N ? r + 1 : 0;
    int32_t bs = r - k - rs, br = prev - k - rs; /* >= -N: k <= N - 2 */
    bs += bs < 0 ? N : 0;
    bs += bs < 0 ? N : 0;
    br += br < 0 ? N : 0;
    br += br < 0 ? N : 0;
    prog_op *send = &ops[r != 0], *recv = &ops[r == 0];
    *send = (prog_op){.bytes = (double)(c->q + (bs < c->rem)) * 4,
                      .msg = r,
                      .peer = c->rank[next],
                      .tag = s,
                      .mb = -1,
                      .type = PROG_SEND,
                      .kind = PROG_COLL,
                      .flags = c->sflags};
    *recv = (prog_op){.bytes = (double)(c->q + (br < c->rem)) * 4,
                      .msg = prev,
                      .peer = c->rank[prev],
                      .tag = s,
                      .mb = -1,
                      .type = PROG_RECV,
                      .kind = PROG_COLL};
    ops[0].flags |= PROG_BATCH;
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
    ring c = {rank,
              N,
              n,
              op != COLL_ALLGATHER,
              op != COLL_REDUCE_SCATTER,
              0,
              0,
              0,
              (uint8_t)(slots > 1 ? PROG_EARLY | PROG_NOWAIT : 0)};
    c.steps = (c.rs + c.ag) * (N - 1);
    c.q = n / N;
    c.rem = n % N;
    gen_prog g = {net_ranks(nw),   N,         N,         2,
                  sizeof(int64_t), ring_rank, ring_next, &c};
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
