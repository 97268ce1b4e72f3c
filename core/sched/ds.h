/* DeepSeek's bidirectional DualPipe (github.com/deepseek-ai/DualPipe,
 * dualpipe/dualpipe.py, DualPipe.step): the per-rank compute order on the
 * SCHED_DUAL placement. Internal to the sched*.c files. */
#ifndef PS_SCHED_DS_H
#define PS_SCHED_DS_H

#include "sched/sched.h"

/* Writes rank's order (chunk 0 the rank-0-first pipeline, microbatches
 * 0..m/2-1; chunk 1 the other, m/2..m-1) into out, at most max actions,
 * and the count to *n. s is checked (p even, m even, m >= 2p). Returns 0,
 * or -1 when out of memory or max is too small. */
int sched_ds_order(const sched_spec *s, int32_t rank, sched_action *out,
                   int32_t max, int32_t *n);

#endif
