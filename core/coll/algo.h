/* Internal to the coll module: the algorithm generators' entry
 * (coll/algo.c), which the driver (coll/coll.c) calls with the generator
 * state it set up. The state and the emitter are coll/emit.h's, NCCL's
 * trees coll/dbt.h's; this header hands both on to its includers. */
#ifndef PS_COLL_ALGO_H
#define PS_COLL_ALGO_H

#include <stdint.h>

#include "coll/coll.h"
#include "coll/dbt.h"
#include "coll/emit.h"

/* Generates algo for op; chunks for the chunked ones. root and rpn are a
 * position and a ranks-per-node count. Returns the number of steps. */
int32_t coll_generate(coll_gen *g, enum coll_op op, int algo, int32_t root,
                      int32_t rpn, int32_t chunks);

#endif
