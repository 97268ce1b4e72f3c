/* Generators of the built-in collective algorithms (sim/gen.h): the same
 * programs coll/algo.c lowers to arrays, computed op by op from a lane's
 * position and op count, so a collective on N ranks needs O(N) memory
 * instead of O(transfers). coll_run uses them when its caller reads no
 * programs back (coll_spec.stream). */
#ifndef PS_GEN_COLL_H
#define PS_GEN_COLL_H

#include <stdint.h>

#include "base/err.h"
#include "coll/coll.h"
#include "net/net.h"
#include "sim/eng.h"

/* 1 when algo for op runs as a generator with this many ring channels
 * (the array path otherwise): ring allreduce, reduce_scatter and allgather
 * with one channel, N >= 2 positions and n > 0 elements; never in the test
 * mode gen_force_array. */
int gen_coll_applies(enum coll_op op, int algo, int32_t channels, int32_t N,
                     int64_t n);

/* Runs it on eng: rank[i] is position i's cluster rank, n the element
 * count, slots as coll_slots. Fills *er, sent[i] (bytes position i sends,
 * the sum coll/algo.c's emitter keeps), *transfers and *steps. Fails like
 * eng_run_gen. */
int gen_coll_run(enum coll_op op, int algo, const int32_t *rank, int32_t N,
                 int64_t n, int32_t slots, enum eng_p2p p2p, net *nw,
                 eng_sim *eng, eng_result *er, double *sent, int64_t *transfers,
                 int32_t *steps, ps_err *err);

#endif
