/* PyTorch's pipeline schedules (torch/distributed/pipelining/schedules.py):
 * the per-rank compute orders of ScheduleLoopedBFS,
 * ScheduleInterleaved1F1B, ScheduleInterleavedZeroBubble,
 * ScheduleZBVZeroBubble and ScheduleDualPipeV, and a forward-only order.
 * Internal to sched/sched.c. */
#ifndef PS_SCHED_PT_H
#define PS_SCHED_PT_H

#include "sched/sched.h"

/* Microbatches per round of PyTorch's interleaved schedules:
 * m / max(1, m / p); 0 when m is not a multiple of the rounds (PyTorch
 * raises ValueError). */
int32_t sched_pt_round(int32_t p, int32_t m);

/* Writes the compute order of rank (chunks local, 0 .. v-1; idle slots
 * dropped, as the runtime skips them) into out, at most max actions, and
 * the count to *n. s is checked. Returns 0, or -1 when max is too small. */
int sched_pt_order(const sched_spec *s, int32_t rank, sched_action *out,
                   int32_t max, int32_t *n);

#endif
