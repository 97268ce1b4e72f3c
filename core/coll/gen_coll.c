/* Collective generators: the ring reduce-scatter / allgather / allreduce
 * of sim/gen_ring.h (op for op what coll/algo.c's ring_rs and ring_ag emit:
 * same order in each lane, same batches, flags, tags and bytes) set up
 * and run, with the figures coll_run reports. Also sim/gen.h's test-mode
 * switch. */
#include "coll/gen_coll.h"

#include <stdlib.h>
#include <string.h>

#include "sim/gen.h"
#include "sim/gen_ring.h"

int gen_force_array(void)
{
    static int known = -1;
    if (known < 0) {
        const char *v = getenv("PIPESIM_ARRAY");
        known = v && *v && strcmp(v, "0") != 0;
    }
    return known;
}

/* gen_prog.rank: a position's cluster rank */
static int32_t ring_rank(const gen_prog *g, int32_t lane)
{
    return ((const gen_ring *)g->ctx)->rank[lane];
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
    int rs = op != COLL_ALLGATHER, ag = op != COLL_REDUCE_SCATTER;
    gen_ring c = {.rank = rank,
                  .N = N,
                  .steps = (rs + ag) * (N - 1),
                  .rs = rs,
                  .rem = (int32_t)(n % N),
                  .big = (double)(n / N + 1) * 4,
                  .small = (double)(n / N) * 4,
                  .sflags =
                      (uint8_t)(slots > 1 ? PROG_EARLY | PROG_NOWAIT : 0)};
    gen_prog g = {
        net_ranks(nw), N,  N, 2,       sizeof(gen_ring_state), ring_rank,
        gen_ring_next, &c, 1, GEN_RING};
    int rc = eng_run_gen(eng, &g, nw, p2p, er, err);
    if (rc)
        return rc;
    /* position r sends every block but its own (reduce-scatter) and every
     * block but r + 1's (allgather): whole numbers of bytes, so the sum is
     * exact in any order and equals the emitter's transfer by transfer */
    for (int32_t r = 0; r < N; r++) {
        int32_t own = r, next = (r + 1) % N;
        int64_t el = 0;
        if (rs)
            el += n - (n / N + (own < n % N));
        if (ag)
            el += n - (n / N + (next < n % N));
        sent[r] = (double)el * 4;
    }
    *transfers = (int64_t)N * c.steps;
    *steps = c.steps;
    return PS_OK;
}
