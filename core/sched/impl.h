/* Internal to sched/sched.c, sched/check.c and sched/lower.c: the buffer the
 * order generators fill, and the helpers the three files share. Not a
 * public interface (sched/sched.h is). */
#ifndef PS_SCHED_INT_H
#define PS_SCHED_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "sched/sched.h"

/* 4 * p * v * m actions must fit an int32 with room for message ids. */
#define SCHED_MAX_ACTIONS (INT32_MAX / 4)

/* Collects an order; with checkpointing every B gets an R right before it
 * unless the order already holds that R (custom lists may place their own).
 * Actions are grouped into steps (see lower_rank): join[i] says action i
 * belongs to the step of action i - 1. */
typedef struct sched_buf {
    sched_action *out;
    uint8_t *join; /* NULL when the caller only wants the order */
    int32_t n, max;
    int checkpoint;
    const uint8_t *has_r; /* custom: R given for chunk * m + mb, or NULL */
    int32_t m;
    int split;              /* built-in: a W right after each B */
    const sched_action *zb; /* zero-bubble: all ranks' orders, or NULL */
} sched_buf;

/* The order of rank into o; s is checked. Fails (PS_ERR) out of memory or
 * when a zero-bubble schedule cannot fit its memory limit. */
int sched_order_rank(const sched_spec *s, int32_t rank, sched_buf *o,
                     ps_err *err);

/* Megatron-style built-ins emit a W right after each B when split. */
int sched_builtin_split(const sched_spec *s);

/* Inference: no backward anywhere (forward_only, or custom lists of F). */
int sched_fwd_only(const sched_spec *s);

/* Is kind a schedule sched_name knows? */
int sched_known_kind(enum sched_kind kind);

/* Writes "F3", "B3.c1" or "FB3/1.c1" (a chunk only when nonzero). */
void sched_action_str(const sched_action *a, char *buf, size_t size);

#endif
