/* ZeRO-2/3's compute side (par/dp_impl.h): a compute lane rewritten with
 * the waits and signals of its collectives (par/fsdp.c). Every backward
 * is split at its buckets' ready points (ZeRO-2: reduce_bucket_size
 * buckets; ZeRO-3: one per layer), each piece followed by its bucket's
 * ready signal; with ZeRO-3 every forward and backward is split into its
 * units, each waiting for its unit's all-gather and then raising started
 * (the gather lane's go for the next unit). A unit's share of a forward is
 * its share of the backward (the stage costs carry no per-layer forward
 * times; a GEMM's backward is twice its forward either way). A recompute
 * (R) runs unsplit: its parameters are the ones its backward gathers
 * (activation checkpointing recomputes a unit inside its backward, where
 * FSDP has it unsharded). O(ops + buckets) per op. */
#include "par/dp_impl.h"

#include <math.h>

#include "base/limit.h"

/* The signals of a lane's events (par_fsdp_rewrite_lane's layout). */
typedef struct lane_sig {
    int32_t ready, gathered, started; /* first of each */
    int32_t e, g;                     /* events so far */
    int gathers_fwd, gathers_bwd;
} lane_sig;

/* WAIT(gathered) (counted as exposed, DP_TAG_GATHER) and SIGNAL(started)
 * of the lane's next all-gather. */
static int32_t gather_wait(lane_sig *s, prog_op *ops, int32_t n)
{
    ops[n] = prog_signal(PROG_WAIT, s->gathered + s->g);
    ops[n++].tag = DP_TAG_GATHER;
    ops[n++] = prog_signal(PROG_SIGNAL, s->started + s->g);
    s->g++;
    return n;
}

/* A piece of op: share of its seconds, memory change mem; nothing when
 * it has neither. */
static int32_t piece(const prog_op *op, double share, double mem, prog_op *ops,
                     int32_t n)
{
    if (!(share > 0) && mem == 0)
        return n;
    ops[n] = *op;
    ops[n].seconds = op->seconds * fmax(0, share);
    ops[n].mem = mem;
    return n + 1;
}

/* A forward split into its units, first layers first: the layers before
 * the chunk's first unit (1 - the last bucket's frac), then each unit after
 * its gather. The activations are allocated by the first piece. */
static int32_t split_forward(const plan *pl, const prog_op *op, lane_sig *s,
                             prog_op *ops, int32_t n)
{
    double top = 0; /* the chunk's last bucket's frac */
    for (int32_t k = 0; k < pl->n; k++)
        if (pl->b[k].chunk == op->chunk)
            top = fmax(top, pl->b[k].frac);
    n = piece(op, 1 - top, op->mem, ops, n);
    for (int32_t k = pl->n - 1; k >= 0; k--) {
        if (pl->b[k].chunk != op->chunk)
            continue;
        double below = 0; /* the frac of the chunk's bucket before k */
        for (int32_t j = k - 1; j >= 0 && below == 0; j--)
            if (pl->b[j].chunk == op->chunk)
                below = pl->b[j].frac;
        n = gather_wait(s, ops, n);
        n = piece(op, pl->b[k].frac - below, 0, ops, n);
    }
    return n;
}

/* A backward split at its buckets' ready points, last layers first: with
 * ZeRO-3 each unit after its gather; each piece followed by its bucket's
 * ready signal; the activations are freed by the last piece. */
static int32_t split_backward(const plan *pl, const prog_op *op, lane_sig *s,
                              prog_op *ops, int32_t n)
{
    double done = 0;
    for (int32_t k = 0; k < pl->n; k++) {
        if (pl->b[k].chunk != op->chunk)
            continue;
        if (s->gathers_bwd)
            n = gather_wait(s, ops, n);
        n = piece(op, pl->b[k].frac - done, 0, ops, n);
        done = fmax(done, pl->b[k].frac);
        ops[n++] = prog_signal(PROG_SIGNAL, s->ready + s->e++);
    }
    ops[n] = *op;
    ops[n].seconds = op->seconds * fmax(0, 1 - done);
    return n + 1;
}

int par_fsdp_rewrite_lane(const dp_config *c, prog_lane *lane, const plan *pl,
                          const fsdp_events *ev, int32_t base, int32_t stage)
{
    lane_sig s = {.ready = base,
                  .gathered = base + ev->nred + 2,
                  .started = base + ev->nred + 2 + ev->ngat,
                  .gathers_fwd = c->stage == PAR_SHARD_PARAMS,
                  .gathers_bwd =
                      c->stage == PAR_SHARD_PARAMS && c->reshard != 1};
    /* per event at most a wait, a signal, a piece and a ready; per op a
     * leading or trailing piece; the end's four */
    size_t cap = (size_t)lane->n * 2 + 4 * ((size_t)ev->nred + ev->ngat) + 4;
    prog_op *ops = limit_malloc(cap * sizeof *ops);
    if (!ops)
        return -1;
    int32_t n = 0;
    for (int32_t i = 0; i < lane->n; i++) {
        const prog_op *op = &lane->ops[i];
        int compute =
            op->type == PROG_COMPUTE && op->chunk >= 0 && op->chunk < c->v;
        if (compute && op->kind == PROG_F && s.gathers_fwd)
            n = split_forward(pl, op, &s, ops, n);
        else if (compute && op->kind == PROG_B)
            n = split_backward(pl, op, &s, ops, n);
        else
            ops[n++] = *op;
    }
    ops[n++] = prog_signal(PROG_WAIT, base + ev->nred);
    ops[n++] = prog_compute(PROG_OPT, stage, 0, -1,
                            c->optimizer_seconds / c->shard, 0);
    if (c->stage == PAR_SHARD_GRADS) /* the updated parameters' all-gather */
        ops[n++] = prog_signal(PROG_SIGNAL, base + ev->nred + 1);
    if (!lane->in_arena)
        limit_free(lane->ops);
    lane->ops = ops;
    lane->in_arena = 0;
    lane->n = n;
    lane->cap = n;
    return 0;
}
