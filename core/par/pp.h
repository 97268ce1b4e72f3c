/* The pp pass (par/pass.h): the pipeline schedule of every instance, its
 * compute ops and the stage-to-stage transfers, on the instance's ranks
 * and timed on their devices (sched_lower). It adds the compute lanes
 * every other pass edits: lane i p + r is instance i's pipeline rank r.
 * Its memory, the activations held from a forward to its backward, is in
 * the compute ops (sim/mem.h); the weights' bytes are the dp pass's. */
#ifndef PS_PAR_PP_H
#define PS_PAR_PP_H

#include "par/pass.h"

extern const par_pass par_pp_pass;

#endif
