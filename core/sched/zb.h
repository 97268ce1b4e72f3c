/* Zero-bubble handcrafted schedules ZB-H1 and ZB-H2 (Qi et al., "Zero
 * Bubble Pipeline Parallelism", ICLR 2024) as sail-sg's scheduler builds
 * them: a greedy placement of F, B and W per stage under a memory limit of
 * p (H1) or 2p (H2) pending microbatches. Internal to sched/sched.c. */
#ifndef PS_SCHED_ZB_H
#define PS_SCHED_ZB_H

#include "sched/sched.h"

/* Writes the orders of all p ranks, 3 * m actions each (F, B, W; chunk 0),
 * rank r at out + r * 3 * m. s is checked and of kind SCHED_ZB_H1 or
 * SCHED_ZB_H2. Fails (PS_ERR) out of memory, or when the reference
 * algorithm cannot fit its memory limit: "zb_h1: the zero-bubble scheduler
 * cannot fit 8 microbatches in its memory limit". */
int sched_zb_orders(const sched_spec *s, sched_action *out, ps_err *err);

#endif
