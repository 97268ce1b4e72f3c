/* The step emitter every generator writes through (coll/emit.h): a
 * transfer as a SEND on the sender's lane and a RECV on the receiver's,
 * batched with the lane's other ops of the same step, or counted in the
 * counting pass; coll/algo.c's generators and coll/dbt.c's double binary
 * tree both call it, so it sits below both. */
#include "coll/emit.h"

#include <assert.h>
#include <stdlib.h>

#include "base/vec.h"

/* Appends a SEND or RECV to pos's lane; capacity was reserved from the
 * counting pass, so this is a plain store (prog_push is the fallback). */
static void push(coll_gen *g, int32_t pos, enum prog_type type, int32_t peer,
                 int32_t msg, double bytes, int32_t step)
{
    int32_t sl = coll_slot(g, pos);
    prog_lane *lane = &g->ps->lanes[g->lane[sl]];
    assert(step >= g->last_step[sl]);
    if (g->last_step[sl] == step && lane->n > 0 &&
        (lane->ops[lane->n - 1].type == PROG_SEND ||
         lane->ops[lane->n - 1].type == PROG_RECV))
        lane->ops[lane->n - 1].flags |= PROG_BATCH; /* same step: batch */
    g->last_step[sl] = step;
    prog_op op = {.bytes = bytes,
                  .msg = msg,
                  .peer = peer,
                  .mb = -1,
                  .tag = step,
                  .type = (uint8_t)type,
                  .kind = PROG_COLL};
    if (type == PROG_SEND && g->slots > 1) /* the receiver's slot is free */
        op.flags = PROG_EARLY | PROG_NOWAIT;
    if (lane->n < lane->cap) {
        /* Step-major generation writes to every lane in turn, so each
         * store would wait for its line; ask for the line this lane's
         * next step writes now, and it arrives while the other lanes are
         * written. A hint: out-of-range addresses do not fault. */
        __builtin_prefetch(lane->ops + lane->n + 4, 1);
        lane->ops[lane->n++] = op;
    } else if (prog_push(g->ps, g->lane[sl], &op))
        g->oom = 1;
}

static void emit(coll_gen *g, int32_t step, int32_t src, int32_t dst,
                 int64_t lo, int64_t cnt, int64_t dlo, int add)
{
    if (step + 1 > g->nsteps)
        g->nsteps = step + 1;
    int32_t ch0 = g->chan, ch1 = g->chan_to >= 0 ? g->chan_to : g->chan;
    if (g->counting) {
        g->ops[coll_slot(g, src)]++;
        g->chan = ch1;
        g->ops[coll_slot(g, dst)]++;
        g->chan = ch0;
        g->next_msg[src]++;
        return;
    }
    if (g->oom)
        return;
    double bytes = (double)cnt * 4;
    double wire = g->wire > 0 ? bytes * g->wire : bytes; /* protocol */
    int32_t msg = g->next_msg[src]++;
    push(g, src, PROG_SEND, g->rank[dst], msg, wire, step);
    g->chan = ch1;
    push(g, dst, PROG_RECV, g->rank[src], msg, wire, step);
    g->chan = ch0;
    g->sent[src] += bytes;
    g->transfers++;
    if (!g->record)
        return;
    if (VEC_RESERVE(g->x, g->xcap, g->nx + 1)) {
        g->oom = 1;
        return;
    }
    g->x[g->nx++] = (coll_xfer){lo, cnt, dlo, step, src, dst, add, msg};
}

void coll_emit(coll_gen *g, int32_t step, int32_t src, int32_t dst, int64_t lo,
               int64_t cnt, int add)
{
    emit(g, step, src, dst, lo, cnt, lo, add);
}

void coll_emit_to(coll_gen *g, int32_t step, int32_t src, int32_t dst,
                  int64_t lo, int64_t cnt, int64_t dlo)
{
    emit(g, step, src, dst, lo, cnt, dlo, 0);
}
