/* The dp pass's compute side (par/dp_impl.h): bucket plans, the split
 * of the last backwards and the first forwards, and the rewrite of a
 * compute lane with its signals, waits and optimizer step. O(ops). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "par/dp_impl.h"

#include "base/limit.h"

/* Plans, like every array that grows with the model, are charged to the
 * --max-memory budget (limit_realloc): a bucket size in the wrong unit
 * must stop at the budget, not at the kernel's OOM killer. */
static int add_bucket(plan *pl, bucket b)
{
    if (pl->n == DP_MAX_BUCKETS)
        return -2;
    if (pl->n == pl->cap) {
        int32_t cap = pl->cap ? pl->cap * 2 : 16;
        bucket *nb = limit_realloc(pl->b, (size_t)cap * sizeof *nb);
        if (!nb)
            return -1;
        pl->b = nb;
        pl->cap = cap;
    }
    pl->b[pl->n++] = b;
    return 0;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Elements a bucket of the distributed optimizer (ZeRO-1) is padded to a
 * multiple of, 0 when buckets are not padded. Megatron-Core pads the end
 * of each bucket to a multiple of lcm(dp, 128) elements, dp the
 * distributed optimizer instance's group (intra_dp_cp_group), so that
 * its reduce-scatter and all-gather split the bucket evenly (the grad
 * and param buffers hold the padding too: dp_memory counts it at the
 * weight's and the gradient's bytes, par_dp_chunk_pad; the fp32 main
 * parameters and Adam's moments are made per parameter shard
 * (distrib_optimizer.py _build_model_and_main_param_groups), not for the
 * padding); without the distributed
 * optimizer nothing is padded (megatron/core/optimizer/param_layout.py
 * pad_bucket_end and bucket_end_divisor, used by
 * distrib_optimizer.py DistributedOptimizer._compute_per_buffer_param_layout;
 * param_and_grad_buffer.py asserts numel == numel_unpadded otherwise;
 * Megatron-Core 0.20, commit d98e8a64dd). Not modelled: the 64-element
 * alignment of each parameter's start (pad_param_start; pipesim knows
 * layers, not their tensors) and pad_buckets_for_high_nccl_busbw (off by
 * default: lcm(dp, 128, 2^16)). */
static int64_t bucket_pad(const dp_config *c)
{
    if (!c->zero || c->fsdp)
        return 0;
    int64_t dp = c->shard;
    return dp / gcd64(dp, 128) * 128;
}

/* Closes bucket b into pl, its end padded (bucket_pad): the
 * collectives move the padded elements. */
static int close_bucket(const dp_config *c, plan *pl, bucket b)
{
    int64_t m = bucket_pad(c);
    if (m > 0) {
        /* the 1e-9 absorbs the rounding of params summed from bytes */
        double padded = ceil(b.params / (double)m - 1e-9) * (double)m;
        if (padded > b.params) {
            pl->pad += padded - b.params;
            b.params = padded;
            b.bytes = padded * c->grad_bytes;
        }
    }
    return pl->count_only ? 0 : add_bucket(pl, b);
}

/* Is chunk `chunk` of pipeline rank r cut into buckets (enum dp_bucketed)?
 * Megatron-Core's DistributedDataParallel sets bucket_size = None, one
 * bucket per gradient buffer, "if we are on a pipeline stage that is not
 * the first (since data-parallel communication on these stages is not on
 * the critical path), or if disable_bucketing is True"
 * (megatron/core/distributed/distributed_data_parallel.py __init__:
 * `if disable_bucketing or pp_rank > 0`), and get_model passes
 * disable_bucketing = (chunk_idx > 0) or
 * args.overlap_param_gather_with_optimizer_step
 * (megatron/training/training.py, per_chunk_disable_bucketing). The same
 * in core 0.19.0 (tag core_v0.19.0, commit 5be9626) and on main at core
 * 0.20.0 (commit d98e8a6). */
static int chunk_bucketed(const dp_config *c, int32_t r, int32_t chunk)
{
    if (c->bucketed == PAR_BUCKET_FIRST)
        return r == 0 && chunk == 0;
    return c->bucketed == PAR_BUCKET_ALL;
}

/* Buckets of one model chunk: layers walked last to first, each layer's
 * gradient produced uniformly over its backward; a bucket closes when full
 * (the first at first_bucket_bytes), at the chunk's first layer, or with
 * per_layer at every layer's end (ZeRO-3's units). A chunk
 * that is not bucketed (chunk_bucketed) is one bucket, ready when its last
 * backward ends. */
int par_dp_plan_chunk(const dp_config *c, int32_t r, int32_t stage,
                      int32_t chunk, plan *pl)
{
    int whole = !chunk_bucketed(c, r, chunk);
    int32_t lo = c->first[stage], hi = lo + c->count[stage] - 1;
    double total = 0;
    for (int32_t i = lo; i <= hi; i++)
        total += c->layer_bwd[i];
    bucket cur = {0, 0, 0, chunk};
    int first = 1;
    double elapsed = 0;
    for (int32_t i = hi; i >= lo; i--) {
        double g = c->layer_params[i] * c->grad_bytes, left = g;
        double t = c->layer_bwd[i];
        while (left > 0) {
            double cap = whole   ? INFINITY
                         : first ? c->first_bucket_bytes
                                 : c->bucket_bytes;
            double take = fmin(cap - cur.bytes, left);
            cur.bytes += take;
            cur.params += take / c->grad_bytes;
            left -= take;
            if (cur.bytes >= cap) {
                cur.frac =
                    total > 0 ? (elapsed + t * (g - left) / g) / total : 1;
                int rc = close_bucket(c, pl, cur);
                if (rc)
                    return rc;
                cur = (bucket){0, 0, 0, chunk};
                first = 0;
            }
        }
        elapsed += t;
        if (cur.bytes > 0)
            cur.frac = total > 0 ? elapsed / total : 1;
        /* ZeRO-3: each layer its own unit (FSDP's wrapping of every
         * transformer block), a layer without parameters joins the next */
        if (c->per_layer && cur.bytes > 0) {
            int rc = close_bucket(c, pl, cur);
            if (rc)
                return rc;
            cur = (bucket){0, 0, 0, chunk};
        }
    }
    return cur.bytes > 0 ? close_bucket(c, pl, cur) : 0;
}

double par_dp_chunk_pad(const dp_config *c, int32_t r, int32_t stage,
                        int32_t chunk)
{
    if (bucket_pad(c) == 0)
        return 0;
    plan pl = {.count_only = 1};
    par_dp_plan_chunk(c, r, stage, chunk, &pl); /* stores nothing: 0 */
    return pl.pad;
}

/* A chunk of one layer holding every parameter: the buckets cut the
 * chunk's gradient bytes, not its layers, so a layer's split is
 * immaterial. */
double par_dp_pad_elements(double params, int32_t shard, int cut,
                           double grad_bytes, double first_bucket_bytes,
                           double bucket_bytes)
{
    int32_t first = 0, count = 1;
    double bwd = 1;
    dp_config c = {
        .p = 1,
        .v = 1,
        .n = 1,
        .d = shard,
        .shard = shard,
        .zero = 1,
        .stage = 1,
        .bucketed = cut ? PAR_BUCKET_ALL : PAR_BUCKET_NONE,
        .first = &first,
        .count = &count,
        .layer_params = &params,
        .layer_bwd = &bwd,
        .grad_bytes = grad_bytes,
        .first_bucket_bytes = first_bucket_bytes,
        .bucket_bytes = bucket_bytes,
    };
    return par_dp_chunk_pad(&c, 0, 0, 0);
}

/* A gradient-producing op: a backward (also the backward half of an
 * overlapped FB), or with a split backward the W (weight gradient) that
 * follows every B of its unit. */
static int is_grad_op(const prog_op *op)
{
    return op->type == PROG_COMPUTE &&
           (op->kind == PROG_B || op->kind == PROG_W || op->kind == PROG_FB_B);
}

/* last[c]: index of the lane's last backward of chunk c (c < v), or -1.
 * One pass, O(ops). */
void par_dp_last_backwards(const prog_lane *lane, int32_t v, int32_t *last)
{
    for (int32_t c = 0; c < v; c++)
        last[c] = -1;
    for (int32_t i = 0; i < lane->n; i++) {
        const prog_op *op = &lane->ops[i];
        if (is_grad_op(op) && op->chunk >= 0 && op->chunk < v)
            last[op->chunk] = i;
    }
}

/* Is op i of lane the last backward of its chunk? */
int par_dp_is_last_backward(const prog_lane *lane, const int32_t *last,
                            int32_t i)
{
    const prog_op *op = &lane->ops[i];
    return is_grad_op(op) && last[op->chunk] == i;
}

/* The forward's order of a lane's buckets (overlap_param_gather), as
 * Megatron's DistributedOptimizer dispatches the all-gathers: model chunks
 * in the order the lane first runs their forward (chunks it never runs a
 * plain forward of first), each chunk's buckets last to first (the last
 * bucket holds the chunk's first layers). first and seq: v scratch each;
 * first[c] is set to the index of chunk c's first forward, or -1. */
void par_dp_forward_order(const prog_lane *lane, const plan *pl, int32_t v,
                          int32_t *first, int32_t *seq, int32_t *order)
{
    for (int32_t c = 0; c < v; c++)
        first[c] = -1;
    for (int32_t i = 0; i < lane->n; i++) {
        const prog_op *op = &lane->ops[i];
        if (op->type == PROG_COMPUTE && op->kind == PROG_F && op->chunk >= 0 &&
            op->chunk < v && first[op->chunk] < 0)
            first[op->chunk] = i;
    }
    /* chunks by their first forward, those without one first (insertion
     * sort: v is small) */
    for (int32_t c = 0; c < v; c++) {
        int32_t j = c;
        while (j > 0 && first[seq[j - 1]] > first[c]) {
            seq[j] = seq[j - 1];
            j--;
        }
        seq[j] = c;
    }
    int32_t n = 0;
    for (int32_t q = 0; q < v; q++)
        for (int32_t k = pl->n - 1; k >= 0; k--)
            if (pl->b[k].chunk == seq[q])
                order[n++] = k;
}

/* Does forward position q (order) open its chunk's buckets? */
int par_dp_chunk_start(const plan *pl, const int32_t *order, int32_t q)
{
    return q == 0 || pl->b[order[q]].chunk != pl->b[order[q - 1]].chunk;
}

int par_dp_dispatch_start(const dp_config *c, const plan *pl,
                          const int32_t *order, int32_t q)
{
    return par_dp_chunk_start(pl, order, q) ||
           (c->pg_start == PAR_PG_STEP && q == 1);
}

/* The position of chunk ch in seq (v entries). */
static int32_t seq_pos(const int32_t *seq, int32_t v, int32_t ch)
{
    int32_t k = 0;
    while (k < v - 1 && seq[k] != ch)
        k++;
    return k;
}

/* The plain forwards among the lane's first `end` ops. */
static int32_t forwards_before(const dp_config *c, const prog_lane *lane,
                               int32_t end)
{
    int32_t n = 0;
    for (int32_t i = 0; i < end; i++) {
        const prog_op *op = &lane->ops[i];
        n += op->type == PROG_COMPUTE && op->kind == PROG_F && op->chunk >= 0 &&
             op->chunk < c->v;
    }
    return n;
}

/* When a chunk's all-gathers go out (overlap_param_gather). Megatron
 * dispatches all of a chunk's buckets at once, in the forward's order on
 * its communication stream, and the forward's pre-hooks only wait for
 * theirs (megatron/core/distributed/distributed_data_parallel.py
 * _make_forward_pre_hook, param_and_grad_buffer.py finish_param_sync;
 * Megatron-LM core 0.20.0, commit d98e8a6). Two cases:
 * - v > 1: aligned across the pipeline (arguments.py: align_param_gather,
 *   on by default): the schedule calls start_param_sync for chunks 0 and
 *   1 before the first forward and for chunk k >= 2 before the forward of
 *   virtual microbatch (k - 1) p - r on pipeline rank r (the one whose id
 *   + r is chunk k - 1's first: schedules.py
 *   forward_backward_pipelining_with_interleaving, param_sync_func).
 * - v = 1: align_param_gather is turned off (arguments.py, "non-
 *   interleaved schedule does not support ... aligned param AG"): the
 *   first bucket's all-gather is dispatched by the first forward pre-hook
 *   (finish_param_sync: "If current bucket's param AG has not been
 *   dispatched, dispatch it now"), and each hook, having made the compute
 *   stream wait for its bucket (Work.wait(): a stream wait, the CPU goes
 *   on), dispatches the next at once. The CPU runs ahead of the GPU
 *   through the forward, so the next buckets follow on the communication
 *   stream back to back; the "one bucket ahead" chain is in CPU time, not
 *   the GPU's. The CPU reaches the first hook only once the stage's input
 *   is there: recv_forward ends with torch.cuda.synchronize()
 *   (p2p_communication.py _communicate, batch_p2p_sync, default true with
 *   no flag to turn it off). So: all of the chunk's buckets right before
 *   the first forward, after its receive.
 * PAR_PG_STEP, Megatron-Core 0.5 to 0.8 (core_r0.8.0, and f2e5db402c of
 * 2024-07-15, whose README H100 table scenarios/h100_validation.lua
 * runs): optimizer/distrib_optimizer.py zero_grad dispatches the first
 * bucket's all-gather ("launch all-gather for first accessed bucket here
 * before forward compute is initiated"), and train_step calls it before
 * the schedule, so it runs from the step's start, beside the pipeline's
 * fill, on every stage at once; _finish_param_sync_helper dispatches
 * bucket i + 1 from the forward pre-hook that waits for bucket i, across
 * model chunks (no align_param_gather yet), so the first chunk's other
 * buckets go at its first forward (after its receive, whose
 * synchronize() also waits for the all-gather in flight: the forward
 * waits for it either way) and chunk k >= 1's at chunk k - 1's first
 * forward, where the CPU reaches the pre-hook of chunk k - 1's last
 * bucket. Under pipeline parallelism without interleaving a stage > 0 is
 * one bucket (bucketed "first"): its whole all-gather at the step's start.
 * disp[k], for the lane's k-th chunk in forward order (seq): the index
 * among its forwards of the one it is dispatched before, at the latest its
 * own first forward; -1 for before everything (dispatch_at: with
 * PAR_PG_STEP the first bucket always). */
static void dispatch_points(const dp_config *c, const prog_lane *lane,
                            int32_t r, const int32_t *first, const int32_t *seq,
                            int32_t *disp)
{
    int step = c->pg_start == PAR_PG_STEP;
    for (int32_t k = 0; k < c->v; k++) {
        disp[k] = -1;
        /* the chunk whose first forward dispatches chunk k */
        int32_t by = step && k > 0 ? seq[k - 1] : seq[k];
        if (first[seq[k]] < 0 || first[by] < 0 || (!step && c->v > 1 && k < 2))
            continue;
        int32_t own = forwards_before(c, lane, first[seq[k]]);
        int32_t at = step        ? forwards_before(c, lane, first[by])
                     : c->v == 1 ? own
                                 : (k - 1) * c->p - r;
        disp[k] = at < 0 ? 0 : at > own ? own : at;
    }
}

/* The dispatch point (disp's) of the all-gathers that forward position q
 * opens (par_dp_dispatch_start). */
static int32_t dispatch_at(const dp_config *c, const plan *pl,
                           const int32_t *order, const int32_t *seq,
                           const int32_t *disp, int32_t q)
{
    if (c->pg_start == PAR_PG_STEP && q == 0)
        return -1;
    return disp[seq_pos(seq, c->v, pl->b[order[q]].chunk)];
}

/* The chunk's first forward op, split where each bucket's layers begin (1
 * - its backward fraction), each piece after the wait for its bucket's
 * all-gather (overlap_param_gather); the activations are allocated by the
 * first piece. Writes into ops from n, returns the new n. */
static int32_t split_first_forward(const plan *pl, const int32_t *order,
                                   const int32_t *gathered, const prog_op *op,
                                   prog_op *ops, int32_t n)
{
    double done = 0;
    int lead = 1;
    for (int32_t q = 0; q < pl->n; q++) {
        const bucket *bk = &pl->b[order[q]];
        if (bk->chunk != op->chunk)
            continue;
        double s0 = fmax(0, 1 - bk->frac);
        if (s0 > done) {
            ops[n] = *op;
            ops[n].seconds = op->seconds * (s0 - done);
            ops[n].mem = lead ? op->mem : 0;
            lead = 0;
            n++;
            done = s0;
        }
        ops[n] = prog_signal(PROG_WAIT, gathered[q]);
        ops[n++].tag = DP_TAG_GATHER;
    }
    ops[n] = *op;
    ops[n].seconds = op->seconds * (1 - done);
    ops[n].mem = lead ? op->mem : 0;
    return n + 1;
}

/* The last backward op of a chunk, split at its buckets' ready points,
 * each piece followed by the bucket's signal (overlap). Writes into ops
 * from n, returns the new n. */
static int32_t split_last_backward(const plan *pl, const int32_t *ready,
                                   const prog_op *op, prog_op *ops, int32_t n)
{
    double done = 0;
    for (int32_t k = 0; k < pl->n; k++) {
        if (pl->b[k].chunk != op->chunk)
            continue;
        double f = pl->b[k].frac;
        if (f > done) {
            ops[n] = *op;
            ops[n].seconds = op->seconds * (f - done);
            ops[n].mem = 0; /* activations go when the backward ends */
            n++;
            done = f;
        }
        ops[n++] = prog_signal(PROG_SIGNAL, ready[k]);
    }
    if (done < 1) {
        ops[n] = *op;
        ops[n].seconds = op->seconds * (1 - done);
        return n + 1;
    }
    /* the backward ended with the last bucket: its memory change belongs
     * to the last piece */
    for (int32_t j = n - 1; j >= 0; j--)
        if (ops[j].type == PROG_COMPUTE) {
            ops[j].mem = op->mem;
            break;
        }
    return n;
}

/* Rewrites a compute lane: the last backward of each chunk split at its
 * buckets' ready points, each piece followed by the buckets' signals
 * (overlap), or all signals after the lane's last op (no overlap, or a
 * rank with no data-parallel peers whose sync is a finalize reduction);
 * then, when the rank has a sync (sync), WAIT(synced); OPT and, with ZeRO,
 * SIGNAL(updated). ready[k] is the signal of bucket k of this lane's
 * plan. */
int par_dp_rewrite_lane(const dp_config *c, prog_lane *lane, const plan *pl,
                        const int32_t *ready, int32_t synced, int32_t updated,
                        int32_t stage, int32_t *last, const int32_t *gathered,
                        const int32_t *reached, int32_t *scratch)
{
    /* gathered, reached: with overlap_param_gather, the signals of the
     * bucket at each forward position (else NULL); scratch: 3v + n */
    int sync = c->sync[stage];
    int32_t extra = 2 * pl->n + 4 + (gathered ? 3 * pl->n + 2 * c->v : 0);
    int32_t *first = scratch, *seq = scratch + c->v;
    int32_t *order = scratch + 2 * c->v, *disp = order + pl->n;
    if (gathered) { /* the all-gathers go out chunk by chunk (par/dp.c) */
        par_dp_forward_order(lane, pl, c->v, first, seq, order);
        dispatch_points(c, lane, stage, first, seq, disp);
    }
    par_dp_last_backwards(lane, c->v, last);
    /* the lane's ops, as prog.c's, in the --max-memory budget */
    prog_op *ops =
        limit_malloc(((size_t)lane->n + (size_t)extra) * sizeof *ops);
    if (!ops)
        return -1;
    int32_t n = 0;
    /* a chunk dispatched before any forward (reached[q] of its first
     * bucket q is its dispatch signal) */
    for (int32_t q = 0; gathered && q < pl->n; q++)
        if (par_dp_dispatch_start(c, pl, order, q) &&
            dispatch_at(c, pl, order, seq, disp, q) < 0)
            ops[n++] = prog_signal(PROG_SIGNAL, reached[q]);
    /* a chunk without a plain forward waits for its buckets up front */
    for (int32_t q = 0; gathered && q < pl->n; q++)
        if (first[pl->b[order[q]].chunk] < 0) {
            ops[n] = prog_signal(PROG_WAIT, gathered[q]);
            ops[n++].tag = DP_TAG_GATHER;
        }
    int32_t nf = 0; /* forwards so far */
    for (int32_t i = 0; i < lane->n; i++) {
        const prog_op *op = &lane->ops[i];
        int fwd = op->type == PROG_COMPUTE && op->kind == PROG_F &&
                  op->chunk >= 0 && op->chunk < c->v;
        /* the chunks dispatched before this forward */
        for (int32_t q = 0; gathered && fwd && q < pl->n; q++)
            if (par_dp_dispatch_start(c, pl, order, q) &&
                dispatch_at(c, pl, order, seq, disp, q) == nf)
                ops[n++] = prog_signal(PROG_SIGNAL, reached[q]);
        nf += fwd;
        if (gathered && fwd && first[op->chunk] == i)
            n = split_first_forward(pl, order, gathered, op, ops, n);
        else if (c->overlap && c->d > 1 &&
                 par_dp_is_last_backward(lane, last, i))
            n = split_last_backward(pl, ready, op, ops, n);
        else
            ops[n++] = *op;
    }
    if (sync && (!c->overlap || c->d == 1))
        for (int32_t k = 0; k < pl->n; k++)
            ops[n++] = prog_signal(PROG_SIGNAL, ready[k]);
    if (sync)
        ops[n++] = prog_signal(PROG_WAIT, synced);
    double opt = c->optimizer_seconds / (c->zero ? c->shard : 1);
    ops[n++] = prog_compute(PROG_OPT, stage, 0, -1, opt, 0);
    if (c->zero)
        ops[n++] = prog_signal(PROG_SIGNAL, updated);
    if (!lane->in_arena) /* a slice of prog_reserve's block is not ours */
        limit_free(lane->ops);
    lane->ops = ops;
    lane->in_arena = 0;
    lane->n = n;
    lane->cap = lane->n;
    return 0;
}
