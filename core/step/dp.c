/* Gradient sync lowering: bucket plans, split backwards, communication
 * lanes. Everything here runs once per step before the engine, O(ops). */
#include "step/dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"

typedef struct bucket {
    double bytes;  /* gradient bytes reduced */
    double params; /* parameters in it (for ZeRO's all-gather) */
    double frac;   /* fraction of the last backward done when it is ready */
    int32_t chunk;
} bucket;

typedef struct plan {
    bucket *b;
    int32_t n, cap;
} plan;

static int add_bucket(plan *pl, bucket b)
{
    if (pl->n == pl->cap) {
        int32_t cap = pl->cap ? pl->cap * 2 : 16;
        bucket *nb = realloc(pl->b, (size_t)cap * sizeof *nb);
        if (!nb)
            return -1;
        pl->b = nb;
        pl->cap = cap;
    }
    pl->b[pl->n++] = b;
    return 0;
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
    if (c->bucketed == DP_BUCKET_FIRST)
        return r == 0 && chunk == 0;
    return c->bucketed == DP_BUCKET_ALL;
}

/* Buckets of one model chunk: layers walked last to first, each layer's
 * gradient produced uniformly over its backward; a bucket closes when full
 * (the first at first_bucket_bytes) or at the chunk's first layer. A chunk
 * that is not bucketed (chunk_bucketed) is one bucket, ready when its last
 * backward ends. */
static int plan_chunk(const dp_config *c, int32_t r, int32_t stage,
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
                if (add_bucket(pl, cur))
                    return -1;
                cur = (bucket){0, 0, 0, chunk};
                first = 0;
            }
        }
        elapsed += t;
        if (cur.bytes > 0)
            cur.frac = total > 0 ? elapsed / total : 1;
    }
    if (cur.bytes > 0 && add_bucket(pl, cur))
        return -1;
    return 0;
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
static void last_backwards(const prog_lane *lane, int32_t v, int32_t *last)
{
    for (int32_t c = 0; c < v; c++)
        last[c] = -1;
    for (int32_t i = 0; i < lane->n; i++) {
        const prog_op *op = &lane->ops[i];
        if (is_grad_op(op) && op->chunk < v)
            last[op->chunk] = i;
    }
}

/* Is op i of lane the last backward of its chunk? */
static int is_last_backward(const prog_lane *lane, const int32_t *last,
                            int32_t i)
{
    const prog_op *op = &lane->ops[i];
    return is_grad_op(op) && last[op->chunk] == i;
}

/* The tag of the forward's waits for overlap_param_gather's all-gathers
 * (dp_exposed counts them). */
#define DP_TAG_GATHER (-2)

/* The forward's order of a lane's buckets (overlap_param_gather), as
 * Megatron's DistributedOptimizer dispatches the all-gathers: model chunks
 * in the order the lane first runs their forward (chunks it never runs a
 * plain forward of first), each chunk's buckets last to first (the last
 * bucket holds the chunk's first layers). first and seq: v scratch each;
 * first[c] is set to the index of chunk c's first forward, or -1. */
static void forward_order(const prog_lane *lane, const plan *pl, int32_t v,
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
static int chunk_start(const plan *pl, const int32_t *order, int32_t q)
{
    return q == 0 || pl->b[order[q]].chunk != pl->b[order[q - 1]].chunk;
}

/* The position of chunk ch in seq (v entries). */
static int32_t seq_pos(const int32_t *seq, int32_t v, int32_t ch)
{
    int32_t k = 0;
    while (k < v - 1 && seq[k] != ch)
        k++;
    return k;
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
 * disp[k], for the lane's k-th chunk in forward order (seq): the index
 * among its forwards of the one it is dispatched before, at the latest its
 * own first forward; -1 for before everything. */
static void dispatch_points(const dp_config *c, const prog_lane *lane,
                            int32_t r, const int32_t *first, const int32_t *seq,
                            int32_t *disp)
{
    for (int32_t k = 0; k < c->v; k++) {
        disp[k] = -1;
        if (first[seq[k]] < 0 || (c->v > 1 && k < 2))
            continue;
        int32_t own = 0; /* forwards before the chunk's first */
        for (int32_t i = 0; i < first[seq[k]]; i++) {
            const prog_op *op = &lane->ops[i];
            own += op->type == PROG_COMPUTE && op->kind == PROG_F &&
                   op->chunk >= 0 && op->chunk < c->v;
        }
        int32_t at = c->v == 1 ? own : (k - 1) * c->p - r;
        disp[k] = at < 0 ? 0 : at > own ? own : at;
    }
}

/* Rewrites a compute lane: the last backward of each chunk split at its
 * buckets' ready points, each piece followed by the buckets' signals
 * (overlap), or all signals after the lane's last op (no overlap); then
 * WAIT(synced), OPT and, with ZeRO, SIGNAL(updated). ready[k] is the signal
 * of bucket k of this lane's plan. */
static int rewrite_lane(const dp_config *c, prog_lane *lane, const plan *pl,
                        const int32_t *ready, int32_t synced, int32_t updated,
                        int32_t stage, int32_t *last, const int32_t *gathered,
                        const int32_t *reached, int32_t *scratch)
{
    /* gathered, reached: with overlap_param_gather, the signals of the
     * bucket at each forward position (else NULL); scratch: 3v + n */
    int32_t extra = 2 * pl->n + 4 + (gathered ? 3 * pl->n + 2 * c->v : 0);
    int32_t *first = scratch, *seq = scratch + c->v;
    int32_t *order = scratch + 2 * c->v, *disp = order + pl->n;
    if (gathered) { /* the all-gathers go out chunk by chunk (dp_lower) */
        forward_order(lane, pl, c->v, first, seq, order);
        dispatch_points(c, lane, stage, first, seq, disp);
    }
    last_backwards(lane, c->v, last);
    prog_op *ops = malloc(((size_t)lane->n + (size_t)extra) * sizeof *ops);
    if (!ops)
        return -1;
    int32_t n = 0;
    /* a chunk dispatched before any forward (reached[q] of its first
     * bucket q is its dispatch signal) */
    for (int32_t q = 0; gathered && q < pl->n; q++)
        if (chunk_start(pl, order, q) &&
            disp[seq_pos(seq, c->v, pl->b[order[q]].chunk)] < 0)
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
            if (chunk_start(pl, order, q) &&
                disp[seq_pos(seq, c->v, pl->b[order[q]].chunk)] == nf)
                ops[n++] = prog_signal(PROG_SIGNAL, reached[q]);
        nf += fwd;
        if (gathered && fwd && first[op->chunk] == i) {
            /* the chunk's first forward, split where each bucket's layers
             * begin (1 - its backward fraction), each piece after the wait
             * for its bucket's all-gather; the activations are allocated
             * by the first */
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
            n++;
            continue;
        }
        int split = c->overlap && c->d > 1 && is_last_backward(lane, last, i);
        if (!split) {
            ops[n++] = *op;
            continue;
        }
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
            n++;
        } else {
            /* the backward ended with the last bucket: its memory change
             * belongs to the last piece */
            for (int32_t j = n - 1; j >= 0; j--)
                if (ops[j].type == PROG_COMPUTE) {
                    ops[j].mem = op->mem;
                    break;
                }
        }
    }
    if (!c->overlap || c->d == 1)
        for (int32_t k = 0; k < pl->n && c->d > 1; k++)
            ops[n++] = prog_signal(PROG_SIGNAL, ready[k]);
    if (c->d > 1)
        ops[n++] = prog_signal(PROG_WAIT, synced);
    double opt = c->optimizer_seconds / (c->zero ? c->d : 1);
    ops[n++] = prog_compute(PROG_OPT, stage, 0, -1, opt, 0);
    if (c->zero && c->d > 1)
        ops[n++] = prog_signal(PROG_SIGNAL, updated);
    if (!lane->in_arena) /* a slice of prog_reserve's block is not ours */
        free(lane->ops);
    lane->ops = ops;
    lane->in_arena = 0;
    lane->n = n;
    lane->cap = lane->n;
    return 0;
}

/* One collective of a bucket over the replicas of pipeline rank r; its
 * transfers are tagged with the bucket's index. */
static int bucket_collective(const dp_config *c, prog_set *ps, const net *nw,
                             coll_forks *forks, const int32_t *lanes,
                             const int32_t *ranks, int op, double bytes,
                             int32_t tag, ps_err *err)
{
    int64_t b = (int64_t)ceil(bytes / 4) * 4;
    coll_spec spec = {0};
    spec.op = (enum coll_op)op;
    spec.algorithm = c->algorithm;
    spec.candidates = c->candidates;
    spec.bytes = b;
    spec.ranks = ranks;
    spec.nranks = c->d;
    spec.root = ranks[0];
    spec.ranks_per_node = c->ranks_per_node;
    spec.hw = c->hw;
    /* NCCL picks the protocol with the algorithm (coll/coll.h); a fixed
     * textbook algorithm runs without one */
    spec.protocol = !c->moves && (c->algorithm == COLL_AUTO ||
                                  coll_algo_has_proto(c->algorithm))
                        ? COLL_PROTO_AUTO
                        : COLL_PROTO_NONE;
    spec.moves = c->moves;
    int32_t *before = malloc((size_t)c->d * sizeof *before);
    if (!before)
        return ps_errf(err, "out of memory");
    for (int32_t j = 0; j < c->d; j++)
        before[j] = ps->lanes[lanes[j]].n;
    int used, proto;
    int rc = coll_append(ps, nw, &spec, lanes, forks, tag, &used, &proto, err);
    if (rc == PS_OK && c->log) {
        dp_log *log = c->log;
        if (log->n == log->cap) {
            int32_t cap = log->cap ? 2 * log->cap : 16;
            dp_coll *p = realloc(log->c, (size_t)cap * sizeof *p);
            if (!p) {
                free(before);
                return ps_errf(err, "out of memory");
            }
            log->c = p;
            log->cap = cap;
        }
        int32_t *blk = malloc((size_t)c->d * 3 * sizeof *blk);
        if (!blk) {
            free(before);
            return ps_errf(err, "out of memory");
        }
        dp_coll *e = &log->c[log->n++];
        *e = (dp_coll){op,        used, proto,      c->d,
                       (double)b, blk,  blk + c->d, blk + 2 * c->d};
        for (int32_t j = 0; j < c->d; j++) {
            e->lanes[j] = lanes[j];
            e->lo[j] = before[j];
            e->hi[j] = ps->lanes[lanes[j]].n;
        }
    }
    free(before);
    return rc;
}

int dp_lower(const dp_config *c, prog_set *ps, const net *nw, ps_err *err)
{
    int32_t p = c->p, d = c->d;
    if (d > 1 && !(c->bucket_bytes > 0 && c->first_bucket_bytes > 0))
        return ps_errf(err, "grad_sync: bucket sizes must be positive");
    if (ps->nlanes < p * d)
        return ps_errf(err, "dp: expected %d compute lanes, found %d",
                       (int)(p * d), (int)ps->nlanes);
    plan *plans = calloc((size_t)p, sizeof *plans);
    int32_t *ready_base = calloc((size_t)p, sizeof *ready_base);
    int32_t *lanes = malloc((size_t)d * sizeof *lanes);
    int32_t *ranks = malloc((size_t)d * sizeof *ranks);
    int32_t *ready = NULL;
    int32_t *last = malloc(((size_t)c->v + 1) * sizeof *last);
    /* the all-gathers beside the forward (step/dp.h): Megatron asserts
     * --overlap-grad-reduce and the distributed optimizer for it */
    int pg = c->overlap_param_gather && c->zero && c->overlap && d > 1;
    /* a communication lane's collectives, one after the other, reuse the
     * lanes the first forked (coll_append) */
    coll_forks forks = {0};
    int rc = PS_OK;
    if (!plans || !ready_base || !lanes || !ranks || !last) {
        rc = ps_errf(err, "out of memory");
        goto done;
    }
    /* bucket plans per pipeline rank, in the order the rank's last
     * backwards run (the same in every replica) */
    int32_t most = 0;
    for (int32_t r = 0; r < p && rc == PS_OK; r++) {
        const prog_lane *lane = &ps->lanes[r];
        last_backwards(lane, c->v, last);
        for (int32_t i = 0; i < lane->n && rc == PS_OK; i++) {
            const prog_op *op = &lane->ops[i];
            if (is_last_backward(lane, last, i) &&
                plan_chunk(c, r, op->stage, op->chunk, &plans[r]))
                rc = ps_errf(err, "out of memory");
        }
        if (plans[r].n > most)
            most = plans[r].n;
    }
    /* ready, then with pg gathered and reached: most each; and
     * rewrite_lane's scratch, 3v + most */
    ready = malloc(((size_t)3 * most + 3 * c->v + most + 1) * sizeof *ready);
    if (!ready && rc == PS_OK)
        rc = ps_errf(err, "out of memory");
    if (rc)
        goto done;
    int32_t *gathered = ready + most, *reached = ready + 2 * most;
    int32_t *scratch = ready + 3 * most;
    /* signals: per (j, r): buckets' ready, synced, updated, and with pg
     * each forward position's gathered and reached */
#define DP_STRIDE(n) ((n) + 2 + (pg ? 2 * (n) : 0))
    for (int32_t r = 0; r < p; r++) {
        ready_base[r] = ps->nsignals;
        ps->nsignals += d * DP_STRIDE(plans[r].n);
    }
    for (int32_t j = 0; j < d && rc == PS_OK; j++)
        for (int32_t r = 0; r < p && rc == PS_OK; r++) {
            int32_t nb = plans[r].n;
            int32_t base = ready_base[r] + j * DP_STRIDE(nb);
            for (int32_t k = 0; k < nb; k++) {
                ready[k] = base + k;
                gathered[k] = base + nb + 2 + k;
                reached[k] = base + 2 * nb + 2 + k;
            }
            if (rewrite_lane(c, &ps->lanes[j * p + r], &plans[r], ready,
                             base + nb, base + nb + 1, r, last,
                             pg ? gathered : NULL, pg ? reached : NULL,
                             scratch))
                rc = ps_errf(err, "out of memory");
        }
    if (rc || d == 1)
        goto done;
    /* communication lanes, index p*d + j*p + r */
    for (int32_t j = 0; j < d && rc == PS_OK; j++)
        for (int32_t r = 0; r < p; r++)
            if (prog_add_lane(ps, c->rank_of[j * p + r]) < 0) {
                rc = ps_errf(err, "out of memory");
                break;
            }
    for (int32_t r = 0; r < p && rc == PS_OK; r++) {
        const plan *pl = &plans[r];
        int32_t stride = DP_STRIDE(pl->n);
        for (int32_t j = 0; j < d; j++) {
            lanes[j] = p * d + j * p + r;
            ranks[j] = c->rank_of[j * p + r];
        }
        if (pg) {
            /* the previous step's update, bucket by bucket in the forward's
             * order (the same on every replica of rank r): a chunk's
             * buckets back to back once the chunk is dispatched
             * (dispatch_points), the signal reached of its first bucket;
             * then each bucket's signal gathered */
            int32_t *order = scratch + 2 * c->v;
            forward_order(&ps->lanes[r], pl, c->v, scratch, scratch + c->v,
                          order);
            for (int32_t q = 0; q < pl->n && rc == PS_OK; q++) {
                int wait = chunk_start(pl, order, q);
                for (int32_t j = 0; wait && j < d && rc == PS_OK; j++) {
                    int32_t base = ready_base[r] + j * stride;
                    prog_op w =
                        prog_signal(PROG_WAIT, base + 2 * pl->n + 2 + q);
                    if (prog_push(ps, lanes[j], &w))
                        rc = ps_errf(err, "out of memory");
                }
                if (rc == PS_OK)
                    rc = bucket_collective(
                        c, ps, nw, &forks, lanes, ranks, COLL_ALLGATHER,
                        pl->b[order[q]].params * c->weight_bytes, order[q],
                        err);
                for (int32_t j = 0; j < d && rc == PS_OK; j++) {
                    int32_t base = ready_base[r] + j * stride;
                    prog_op s = prog_signal(PROG_SIGNAL, base + pl->n + 2 + q);
                    if (prog_push(ps, lanes[j], &s))
                        rc = ps_errf(err, "out of memory");
                }
            }
        }
        for (int32_t k = 0; k < pl->n && rc == PS_OK; k++) {
            for (int32_t j = 0; j < d && rc == PS_OK; j++) {
                prog_op w =
                    prog_signal(PROG_WAIT, ready_base[r] + j * stride + k);
                if (prog_push(ps, lanes[j], &w))
                    rc = ps_errf(err, "out of memory");
            }
            if (rc == PS_OK)
                rc = bucket_collective(c, ps, nw, &forks, lanes, ranks,
                                       c->zero ? COLL_REDUCE_SCATTER
                                               : COLL_ALLREDUCE,
                                       pl->b[k].bytes, k, err);
        }
        for (int32_t j = 0; j < d && rc == PS_OK; j++) {
            int32_t base = ready_base[r] + j * stride;
            prog_op s = prog_signal(PROG_SIGNAL, base + pl->n);
            if (prog_push(ps, lanes[j], &s))
                rc = ps_errf(err, "out of memory");
            if (c->zero && !pg) {
                prog_op w = prog_signal(PROG_WAIT, base + pl->n + 1);
                if (prog_push(ps, lanes[j], &w))
                    rc = ps_errf(err, "out of memory");
            }
        }
        /* ZeRO-1: the updated parameter shards come back to everyone
         * (with pg at the step's start, above) */
        for (int32_t k = 0; c->zero && !pg && k < pl->n && rc == PS_OK; k++)
            rc = bucket_collective(c, ps, nw, &forks, lanes, ranks,
                                   COLL_ALLGATHER,
                                   pl->b[k].params * c->weight_bytes, k, err);
    }
#undef DP_STRIDE
done:
    coll_forks_free(&forks);
    for (int32_t r = 0; plans && r < p; r++)
        free(plans[r].b);
    free(plans);
    free(ready_base);
    free(lanes);
    free(ranks);
    free(ready);
    free(last);
    return rc;
}

void dp_exposed(const dp_config *c, const prog_set *ps, double *exposed)
{
    int32_t n = c->p * c->d;
    for (int32_t l = 0; l < n; l++) {
        const prog_lane *lane = &ps->lanes[l];
        exposed[l] = 0;
        if (c->d == 1 || lane->n < 2)
            continue;
        /* the lane ends WAIT(synced), OPT[, SIGNAL(updated)] */
        int32_t opt = lane->n - 1 - (c->zero ? 1 : 0);
        const prog_op *o = &lane->ops[opt], *w = &lane->ops[opt - 1];
        exposed[l] = o->t_start - w->t_start;
        /* overlap_param_gather: the forward's waits for the all-gathers */
        for (int32_t i = 0; i < lane->n; i++)
            if (lane->ops[i].type == PROG_WAIT &&
                lane->ops[i].tag == DP_TAG_GATHER)
                exposed[l] += lane->ops[i].t_end - lane->ops[i].t_start;
        if (c->zero) {
            const prog_lane *comm = &ps->lanes[n + l];
            double end = comm->n ? comm->ops[comm->n - 1].t_end : o->t_end;
            if (end > o->t_end)
                exposed[l] += end - o->t_end;
        }
    }
}

void dp_log_clear(dp_log *log)
{
    for (int32_t k = 0; k < log->n; k++)
        free(log->c[k].lanes);
    log->n = 0;
}

void dp_log_free(dp_log *log)
{
    dp_log_clear(log);
    free(log->c);
    log->c = NULL;
    log->cap = 0;
}

void dp_log_span(const dp_log *log, const prog_set *ps, int32_t k, double *t0,
                 double *t1)
{
    const dp_coll *e = &log->c[k];
    *t0 = INFINITY;
    *t1 = -INFINITY;
    for (int32_t j = 0; j < e->d; j++) {
        const prog_lane *lane = &ps->lanes[e->lanes[j]];
        for (int32_t i = e->lo[j]; i < e->hi[j]; i++) {
            if (lane->ops[i].t_start < *t0)
                *t0 = lane->ops[i].t_start;
            if (lane->ops[i].t_end > *t1)
                *t1 = lane->ops[i].t_end;
        }
    }
    if (*t1 < *t0)
        *t0 = *t1 = 0;
}
