/* Fault injection: stalled ranks, slow ranks and failed links, and the
 * recv_timeout deadline. A fault plan is a small per-rank table built once
 * per run from the scenario's list; the engine consults it when an op
 * starts and when a transfer starts or arrives, and only when a plan is set,
 * so a run without faults pays one branch per op. Semantics (README, "Faults
 * and recv_timeout"):
 *   stall  at time t the rank stops starting ops: an op it would start at
 *          or after t never starts; ops already started (a running compute
 *          op, posted sends and receives) complete.
 *   slow   a compute op the rank starts at or after `from` takes
 *          seconds / speed (speed 0.7: 70% of full speed).
 *   down   transfers between the two ranks, either direction, never
 *          complete from time t on: one starting at or after t does not
 *          start, one in flight at t is lost (it would arrive at or after
 *          t; it keeps its share of the links until then). Other pairs are
 *          unaffected, even where their routes share links with this one.
 *   recv_timeout  a lane that waits on posted sends and receives (a batch)
 *          longer than this ends the run with a deadline error. */
#ifndef PS_FAULT_H
#define PS_FAULT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "sim/prog.h"

enum fault_kind { FAULT_STALL, FAULT_SLOW, FAULT_DOWN };

typedef struct fault {
    enum fault_kind kind;
    int32_t rank; /* STALL, SLOW: the rank; DOWN: one end of the link */
    int32_t peer; /* DOWN: the other end */
    double t;     /* STALL: when it stops; SLOW: `from`; DOWN: when */
    double speed; /* SLOW: fraction of full speed, in (0, 1] */
} fault;

typedef struct fault_rank {
    double stall_at;  /* INFINITY: never */
    double slow_from; /* INFINITY: never */
    double speed;     /* compute speed from slow_from on */
    int32_t nlinks;   /* DOWN faults with this rank as an end */
} fault_rank;

typedef struct fault_plan {
    const fault *list; /* borrowed; n entries in the scenario's order */
    int32_t n;
    double recv_timeout; /* seconds; INFINITY: wait for ever */
    fault_rank *rank;    /* nranks entries, owned by the caller */
    int32_t nranks;
    const char *tag_label; /* what a collective op's tag counts in
                              messages: "step" (the default) or "bucket" */
} fault_plan;

/* Builds fp over list (borrowed) for a network of nranks ranks, filling
 * ranks (nranks entries, caller-owned). Fails, naming the field as
 * "faults[k].slow" (k from 1, as in Lua), on a rank outside 0..nranks-1, a link
 * from a rank to itself, a time that is negative or not finite, a speed
 * outside (0, 1], a second fault of the same kind on a rank or link, or a
 * recv_timeout that is not > 0 (INFINITY: no deadline). */
int fault_plan_init(fault_plan *fp, const fault *list, int32_t n,
                    double recv_timeout, fault_rank *ranks, int32_t nranks,
                    ps_err *err);

/* Parses len bytes of text as a fault time: "at 2 ms", "2 ms" or a bare
 * number of seconds. Fails like unit_parse_len, or on a negative time. */
int fault_parse_time(const char *text, size_t len, double *t, ps_err *err);

/* Fails, naming the entry, when a fault's rank (or either end of a link)
 * runs none of the lanes of ps: such a fault would change nothing.
 * O(faults x lanes), once per run. */
int fault_check_ranks(const fault_plan *fp, const prog_set *ps, ps_err *err);

/* Describes list entry i as "rank 3 stalled at 2 ms", "rank 5 slow (70%
 * speed) from 1 ms" or "link 2-3 down at 1 ms". Returns what snprintf
 * returns. */
int fault_describe(const fault_plan *fp, int32_t i, char *buf, int size);

/* Appends "; <fault>" for every fault in effect at time now (its time
 * <= now) to buf, which holds len characters. Returns the new length. */
int fault_append_active(const fault_plan *fp, double now, char *buf, int len,
                        int size);

/* Writes seconds in the unit that suits them: "12.000 ms" with fixed, 3
 * decimals; "12 ms" (up to 6 significant digits) without. */
void fault_format_time(double seconds, int fixed, char *buf, int size);

/* The duration of a compute op of `seconds` that rank starts at now. */
static inline double fault_compute_seconds(const fault_plan *fp, int32_t rank,
                                           double now, double seconds)
{
    const fault_rank *r = &fp->rank[rank];
    return now >= r->slow_from ? seconds / r->speed : seconds;
}

/* When the link between ranks a and b goes down; INFINITY if never.
 * O(number of faults) for ranks with a link fault, O(1) otherwise. */
static inline double fault_down_at(const fault_plan *fp, int32_t a, int32_t b)
{
    if (fp->rank[a].nlinks == 0 || fp->rank[b].nlinks == 0)
        return INFINITY;
    for (int32_t i = 0; i < fp->n; i++) {
        const fault *f = &fp->list[i];
        if (f->kind == FAULT_DOWN &&
            ((f->rank == a && f->peer == b) || (f->rank == b && f->peer == a)))
            return f->t;
    }
    return INFINITY;
}

#endif
