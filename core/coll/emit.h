/* Internal to the coll module: the generator state every algorithm
 * writes through and the step emitter (coll/emit.c). Positions 0 .. N-1
 * index the collective's listed ranks; element ranges are in float32
 * elements. The lowest of the generator's headers: coll/dbt.h and
 * coll/algo.h build on it, it knows neither. */
#ifndef PS_COLL_EMIT_H
#define PS_COLL_EMIT_H

#include <stdint.h>

#include "coll/coll.h"

/* One transfer as the data replay needs it. */
typedef struct coll_xfer {
    int64_t lo, cnt; /* element range at the sender */
    int64_t dlo;     /* where it lands at the receiver: lo, or for the
                        out-of-place ops an offset in the receive buffer
                        (n + ..., coll_stride) */
    int32_t step;
    int32_t src, dst; /* positions */
    int32_t add;      /* 1: receiver adds, 0: receiver copies */
    int32_t msg;      /* its message id (live mode's coll_move) */
} coll_xfer;

typedef struct coll_gen {
    prog_set *ps;
    const int32_t *rank; /* position -> cluster rank */
    int32_t N;
    int64_t n;        /* elements */
    int32_t channels; /* ring and tree: channels (coll_ring_start); 1 =
                         one ring or one pair of trees */
    int32_t slots;    /* > 1: sends do not wait for the receiver (coll/coll.h,
                         "Slots"); 1: lockstep */
    double wire;      /* bytes on the wire per payload byte (the
                         protocol's, coll_proto_wire); 0 = 1 */
    int32_t
        chan_lanes;     /* lanes per position: channels of a pipelined ring
                           each have their own (coll/coll.c plan_lanes), else 1 */
    int32_t chan;       /* the channel being emitted (ring_channels) */
    int32_t *lane;      /* lane slot -> lane; slot = position, + chan N
                           with channel lanes (coll_slot) */
    int32_t *last_step; /* lane slot -> step of its last op, -1 */
    double *sent;       /* position -> bytes sent */
    int32_t nsteps;     /* 1 + highest step emitted */
    int64_t transfers;
    int counting;      /* first pass: only count ops and sends */
    int append;        /* lanes hold other ops already (coll_append) */
    int64_t *ops;      /* lane slot -> ops (counting pass) */
    int32_t *next_msg; /* position -> next message id of its sends: ids are
                          handed out sender by sender so that prog_seal and
                          the engine walk them in lane order (cache
                          friendly); counting pass: its sends */
    int record;        /* keep coll_xfer records (data mode) */
    coll_xfer *x;
    int64_t nx;
    size_t xcap;
    int oom;
    int32_t chan_to; /* the receiver's lane sub-index (coll_slot's chan),
                        -1: chan, as the sender's */
} coll_gen;

/* The lane slot of position pos for the channel being emitted. */
static inline int32_t coll_slot(const coll_gen *g, int32_t pos)
{
    return g->chan_lanes > 1 ? pos + g->chan * g->N : pos;
}

/* Element range of shard i when n elements are split over parts. */
static inline int64_t coll_seg_lo(int64_t n, int32_t parts, int32_t i)
{
    int64_t q = n / parts, r = n % parts;
    return (int64_t)i * q + (i < r ? i : r);
}

static inline int64_t coll_seg_cnt(int64_t n, int32_t parts, int32_t i)
{
    return n / parts + (i < n % parts);
}

/* Local index at which ring channel c of C enters every node of rpn
 * positions (and rpn - 1 positions later leaves it): channels spread
 * evenly over the node, so with C = rpn channel c enters at local c. */
static inline int32_t coll_ring_start(int32_t rpn, int32_t C, int32_t c)
{
    return (int32_t)((int64_t)c * rpn / C);
}

/* Position v with its local index in its node of rpn rotated by st: the
 * relabelling that gives channel c of NCCL's tree (coll/algo.c). */
static inline int32_t coll_tree_rot(int32_t v, int32_t rpn, int32_t st)
{
    return v - v % rpn + (v % rpn + st) % rpn;
}

/* Emits one transfer of elements [lo, lo+cnt) from position src to dst in
 * step `step`; steps of one position must not decrease. */
void coll_emit(coll_gen *g, int32_t step, int32_t src, int32_t dst, int64_t lo,
               int64_t cnt, int add);

/* coll_emit for out-of-place ops: the receiver keeps the elements at
 * dlo of its buffer (a copy). */
void coll_emit_to(coll_gen *g, int32_t step, int32_t src, int32_t dst,
                  int64_t lo, int64_t cnt, int64_t dlo);

#endif
