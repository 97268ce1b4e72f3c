/* The event queue, ordered by (time, sequence number). The sequence number
 * is a per-queue counter taken at push, so two events at the same time pop
 * in the order they were pushed and every run is deterministic bit for bit
 * (the libuv timer rule).
 *
 * Most events of a simulation are pushed in time order (a transfer or a
 * compute op ends a fixed time after now, and now only grows), so the queue
 * is two structures: a FIFO run that takes every event not earlier than the
 * run's last one, O(1) both ways, and a binary min-heap for the rest,
 * O(log n). Pop takes the earlier of the two heads. Neither allocates once
 * grown to its working size. */
#ifndef PS_EQ_H
#define PS_EQ_H

#include <stddef.h>
#include <stdint.h>

/* Event types: the one number space of eq_event.type, owned here so that
 * no two modules pushing into the same queue pick the same number. The
 * engine (eng.c) pushes EQ_COMPUTE and EQ_TIMEOUT and hands every EQ_NET
 * back to the network (net_flow.c, net_event), which pushes it. 0 is left
 * to tests that use the queue alone. */
enum eq_type {
    EQ_COMPUTE = 1, /* a compute op ends; id = its lane */
    EQ_NET = 2,     /* a network transfer or flow phase ends (net.h) */
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

typedef struct eq {
    eq_event *heap; /* min-heap of the out-of-order events */
    size_t n, cap;
    eq_event *run; /* ring buffer of in-order events: head first */
    size_t head, len, run_cap;
    uint64_t next_seq;
} eq;

/* Initialises an empty queue. eq_free releases its memory; both harmless to
 * call twice. */
void eq_init(eq *q);
void eq_free(eq *q);

/* Empties the queue and restarts sequence numbers, keeping its memory. */
void eq_clear(eq *q);

/* Adds an event. Returns 0, or -1 when memory runs out. */
int eq_push(eq *q, double t, int32_t type, int32_t id, uint32_t version);

/* Removes the earliest event into *out. Returns 0, or -1 when empty. */
int eq_pop(eq *q, eq_event *out);

/* Copies the earliest event into *out without removing it. Returns 0, or -1
 * when empty. */
int eq_peek(const eq *q, eq_event *out);

static inline int eq_empty(const eq *q)
{
    return q->n == 0 && q->len == 0;
}

#endif
