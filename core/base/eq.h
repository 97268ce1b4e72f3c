/* The event queue, ordered by (time, sequence number). The sequence number
 * is a per-queue counter taken at push, so two events at the same time pop
 * in the order they were pushed and every run is deterministic bit for bit
 * (the libuv timer rule). Any correct priority queue on that key pops the
 * same events in the same order: the structure below is a matter of speed
 * only.
 *
 * Almost every event of a simulation is pushed as now + d for one of a few
 * delays d (a compute op of a given cost, a transfer of a given size), and
 * now only grows, so the events of one delay arrive in time order (IEEE
 * addition is monotone). The queue therefore keeps up to EQ_RUNS sorted
 * runs (FIFO ring buffers): a push goes to the run whose last event is the
 * latest not after it (patience sorting's best fit, which needs as many
 * runs as the longest run of pending events pushed in decreasing time
 * order, at most the number of distinct delays in flight), O(runs in use);
 * only when every run ends later does it go to a binary min-heap,
 * O(log n). Pop takes the earliest of the runs' heads and the heap's top.
 * Neither allocates once grown to its working size. */
#ifndef PS_EQ_H
#define PS_EQ_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Event types: the one number space of eq_event.type, owned here so that
 * no two modules pushing into the same queue pick the same number. The
 * engine (sim/eng.c) pushes EQ_COMPUTE and EQ_TIMEOUT and hands every EQ_NET
 * back to the network (net/flow.c, net_event), which pushes it. 0 is left
 * to tests that use the queue alone. */
enum eq_type {
    EQ_COMPUTE = 1, /* a compute op ends; id = its lane */
    EQ_NET = 2,     /* a network transfer or flow phase ends (net/net.h) */
    EQ_TIMEOUT = 3  /* recv_timeout of lane id; version = the lane's
                       wait_seq when it blocked */
};

typedef struct eq_event {
    double t;         /* when it happens, seconds */
    uint64_t seq;     /* push order, breaks ties in t */
    int32_t type;     /* enum eq_type */
    int32_t id;       /* owner-defined subject (lane, message, flow) */
    uint32_t version; /* for lazy cancellation: stale when it differs */
} eq_event;

/* Most sorted runs kept besides the heap. */
#define EQ_RUNS 8

/* One sorted run: a ring buffer whose capacity is a power of two. */
typedef struct eq_run {
    eq_event *ev;
    uint32_t head, len, cap; /* cap 0: ev NULL */
} eq_run;

typedef struct eq {
    eq_event *heap; /* min-heap of the events no run could take */
    size_t n, cap;
    int nruns; /* run[0 .. nruns) are not empty; the others keep their
                  buffers for reuse */
    /* per run in use, side by side for push's and pop's scans: the time
     * of its last event, and the time and sequence of its first (of run
     * 0 stale while it is the only run, as eq_pop's fast path leaves
     * them: the slow paths refresh them first, and they are current
     * whenever more than one run is in use, since only eq_push_slow opens
     * a second run) */
    double last[EQ_RUNS];
    double first_t[EQ_RUNS];
    uint64_t first_seq[EQ_RUNS];
    eq_run run[EQ_RUNS];
    uint64_t next_seq;
    eq_event popped; /* eq_pop_ref's event from the slow path */
} eq;

/* Initialises an empty queue. eq_free releases its memory; both harmless to
 * call twice. */
void eq_init(eq *q);
void eq_free(eq *q);

/* Empties the queue and restarts sequence numbers, keeping its memory. */
void eq_clear(eq *q);

/* The general cases of eq_push and eq_pop below (any number of runs, the
 * heap); call those. */
int eq_push_slow(eq *q, double t, int32_t type, int32_t id, uint32_t version);
int eq_pop_slow(eq *q, eq_event *out);

/* Best fit: the run ending latest but not after t, or -1. Its events all
 * come before an event at t pushed now (their seq is smaller), so it stays
 * sorted by (t, seq). eq_push and eq_push_slow share it. */
static inline int eq_best_run_(const eq *q, double t)
{
    int best = -1;
    double last = -INFINITY;
    for (int i = 0; i < q->nruns; i++) {
        double l = q->last[i];
        if (l <= t && l >= last) {
            best = i;
            last = l;
        }
    }
    return best;
}

/* Adds an event. Returns 0, or -1 when memory runs out. Inline for the
 * common cases: one run taking it (a collective's transfers end in push
 * order), or one of a few runs (a pipeline of uniform stages keeps two or
 * three), by eq_push_slow's best fit, so into the same run. */
static inline int eq_push(eq *q, double t, int32_t type, int32_t id,
                          uint32_t version)
{
    eq_run *r = &q->run[0];
    int nr = q->nruns;
    if (nr == 1) {
        if (q->last[0] <= t && r->len < r->cap) {
            r->ev[(r->head + r->len) & (r->cap - 1)] =
                (eq_event){t, q->next_seq++, type, id, version};
            r->len++;
            q->last[0] = t;
            return 0;
        }
        return eq_push_slow(q, t, type, id, version);
    }
    int best = eq_best_run_(q, t); /* nr > 1: first_t[] are current, see eq */
    if (best >= 0 && q->run[best].len < q->run[best].cap) {
        r = &q->run[best];
        r->ev[(r->head + r->len) & (r->cap - 1)] =
            (eq_event){t, q->next_seq++, type, id, version};
        r->len++;
        q->last[best] = t;
        return 0;
    }
    return eq_push_slow(q, t, type, id, version);
}

/* The run whose head is the earliest event, for an empty heap and more
 * than one run: the least (first_t, first_seq), run 0 when they compare
 * false (NaN), as base/eq.c's first. */
static inline int eq_first_run_(const eq *q)
{
    int w = 0;
    double t = q->first_t[0];
    uint64_t seq = q->first_seq[0];
    for (int i = 1; i < q->nruns; i++) {
        double ti = q->first_t[i];
        if (ti < t || (ti == t && q->first_seq[i] < seq)) {
            t = ti;
            seq = q->first_seq[i];
            w = i;
        }
    }
    return w;
}

/* The earliest event, removed, for an empty heap and more than one run
 * when the run keeps an event after it (its cached first event is
 * updated); else NULL. */
static inline const eq_event *eq_pop_runs_(eq *q)
{
    if (q->n != 0 || q->nruns < 2)
        return NULL;
    int w = eq_first_run_(q);
    eq_run *r = &q->run[w];
    if (r->len < 2)
        return NULL;
    const eq_event *ev = &r->ev[r->head];
    r->head = (r->head + 1) & (r->cap - 1);
    r->len--;
    q->first_t[w] = r->ev[r->head].t;
    q->first_seq[w] = r->ev[r->head].seq;
    return ev;
}

/* Removes the earliest event into *out. Returns 0, or -1 when empty.
 * Inline for an empty heap and a run that keeps an event after it; of
 * one run, its cached first event is left stale (see eq). */
static inline int eq_pop(eq *q, eq_event *out)
{
    eq_run *r = &q->run[0];
    if (q->nruns == 1 && q->n == 0 && r->len > 1) {
        *out = r->ev[r->head];
        r->head = (r->head + 1) & (r->cap - 1);
        r->len--;
        return 0;
    }
    const eq_event *ev = eq_pop_runs_(q);
    if (ev) {
        *out = *ev;
        return 0;
    }
    return eq_pop_slow(q, out);
}

/* eq_pop without the copy: removes the earliest event and returns it,
 * valid until the next push or pop, or NULL when empty. */
static inline const eq_event *eq_pop_ref(eq *q)
{
    eq_run *r = &q->run[0];
    if (q->nruns == 1 && q->n == 0 && r->len > 1) {
        const eq_event *ev = &r->ev[r->head];
        r->head = (r->head + 1) & (r->cap - 1);
        r->len--;
        return ev;
    }
    const eq_event *ev = eq_pop_runs_(q);
    if (ev)
        return ev;
    return eq_pop_slow(q, &q->popped) ? NULL : &q->popped;
}

/* Copies the earliest event into *out without removing it. Returns 0, or -1
 * when empty. Not const: it refreshes run 0's cached first event. */
int eq_peek(eq *q, eq_event *out);

static inline int eq_empty(const eq *q)
{
    return q->n == 0 && q->nruns == 0;
}

#endif
