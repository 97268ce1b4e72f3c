/* The dp pass (par/dp.h): bucket plans, split backwards, communication
 * lanes, the finalize reductions and the optimizer step. Everything here
 * runs once per step before the engine, O(ops). */
#include "par/dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"

/* The pass's view of a step: par_step's settings with the group sizes
 * worked out. */
typedef struct dp_config {
    const par_step *st;
    int32_t p, v, n; /* pipeline ranks, chunks per rank, instances */
    int32_t d;       /* instances in each data-parallel group */
    int32_t shard;   /* ranks ZeRO-1 shards the optimizer over */
    int zero;        /* ZeRO-1 with d > 1 */
    int pg;          /* overlap_param_gather in force */
    int bucketed;    /* enum par_bucketed */
    int overlap;
    double optimizer_seconds;
    const int32_t *first, *count;
    const double *layer_params, *layer_bwd;
    double grad_bytes, weight_bytes, bucket_bytes, first_bucket_bytes;
    int32_t ranks_per_node;
    const uint8_t *sync; /* per pipeline rank: has a sync to wait for */
} dp_config;

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
    if (c->bucketed == PAR_BUCKET_FIRST)
        return r == 0 && chunk == 0;
    return c->bucketed == PAR_BUCKET_ALL;
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
static int rewrite_lane(const dp_config *c, prog_lane *lane, const plan *pl,
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
    if (gathered) { /* the all-gathers go out chunk by chunk (par_dp_lower) */
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
        if (gathered && fwd && first[op->chunk] == i)
            n = split_first_forward(pl, order, gathered, op, ops, n);
        else if (c->overlap && c->d > 1 && is_last_backward(lane, last, i))
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
        free(lane->ops);
    lane->ops = ops;
    lane->in_arena = 0;
    lane->n = n;
    lane->cap = lane->n;
    return 0;
}

/* One collective over the group's lanes (one per listed rank), tagged
 * with the bucket's index. */
static int group_collective(par_step *st, coll_forks *forks,
                            const int32_t *lanes, const int32_t *ranks,
                            int32_t n, int32_t rpn, int op, double bytes,
                            int32_t tag, ps_err *err)
{
    coll_spec spec = {0};
    spec.op = (enum coll_op)op;
    spec.algorithm = st->dp.algorithm;
    spec.candidates = st->dp.candidates;
    spec.bytes = (int64_t)ceil(bytes / 4) * 4;
    spec.ranks = ranks;
    spec.nranks = n;
    spec.root = ranks[0];
    spec.ranks_per_node = rpn;
    spec.hw = st->hw;
    spec.protocol = par_protocol(st, st->dp.algorithm, st->dp.protocol);
    return par_append_coll(st, forks, &spec, lanes, tag, err);
}

/* Everything dp_lower keeps while it works. */
typedef struct dp_work {
    plan *plans;         /* per pipeline rank */
    int32_t *ready_base; /* per pipeline rank: its first signal */
    int32_t *comm;       /* per simulated rank: its communication lane, or
                            -1 */
    int32_t *lanes, *ranks, *group; /* d (or 2) each: one collective's */
    int32_t *ready;   /* 3 most + 3v + most: signals and scratch */
    int32_t *last;    /* v + 1 */
    uint8_t *sync;    /* per pipeline rank */
    coll_forks forks; /* communication lanes' forks, reused */
    int32_t most;     /* the most buckets of a plan */
} dp_work;

static void work_free(dp_work *w, int32_t p)
{
    coll_forks_free(&w->forks);
    for (int32_t r = 0; w->plans && r < p; r++)
        free(w->plans[r].b);
    free(w->plans);
    free(w->ready_base);
    free(w->comm);
    free(w->lanes);
    free(w->ranks);
    free(w->group);
    free(w->ready);
    free(w->last);
    free(w->sync);
}

/* Signals per (instance, pipeline rank) with n buckets: the buckets'
 * ready, synced, updated, and with pg each forward position's gathered
 * and reached. */
static int32_t signal_stride(const dp_config *c, int32_t n)
{
    return n + 2 + (c->pg ? 2 * n : 0);
}

static int32_t signal_base(const dp_config *c, const dp_work *w, int32_t i,
                           int32_t r)
{
    return w->ready_base[r] + i * signal_stride(c, w->plans[r].n);
}

/* The dp_config of st (par/dp.h's view of its settings). */
static void configure(dp_config *c, const par_step *st, const uint8_t *sync)
{
    const par_sim *sim = st->sim;
    const par_layout *L = st->layout;
    *c = (dp_config){0};
    c->st = st;
    c->p = sim->p;
    c->v = st->v;
    c->n = sim->n;
    c->d = sim->unfolded[PAR_DP] * sim->unfolded[PAR_CP];
    c->shard = L->s.shard_group > 0 ? L->s.shard_group : L->s.dp * L->s.cp;
    c->zero = L->s.shard == PAR_SHARD_OPTIMIZER && c->d > 1;
    /* Megatron asserts --overlap-grad-reduce and the distributed optimizer
     * for --overlap-param-gather */
    c->pg = st->dp.overlap_param_gather && c->zero && st->dp.overlap;
    c->bucketed = st->dp.bucketed;
    c->overlap = st->dp.overlap;
    c->optimizer_seconds = st->dp.optimizer_seconds;
    c->first = st->first;
    c->count = st->count;
    c->layer_params = st->layer_params;
    c->layer_bwd = st->layer_bwd;
    c->grad_bytes = st->grad_bytes;
    c->weight_bytes = st->weight_bytes;
    c->bucket_bytes = st->dp.bucket_bytes;
    c->first_bucket_bytes = st->dp.first_bucket_bytes;
    c->ranks_per_node = par_dp_ranks_per_node(st);
    c->sync = sync;
}

/* Does pipeline rank r have a reduction to wait for (data-parallel peers,
 * or a finalize reduction with another rank)? */
static int rank_synced(const par_step *st, int32_t d, int32_t r)
{
    for (int32_t f = 0; f < st->nfinalize && d == 1; f++) {
        const par_finalize *x = &st->finalize[f];
        if (x->r0 != x->r1 && (x->r0 == r || x->r1 == r))
            return 1;
    }
    return d > 1;
}

static void sync_ranks(const par_step *st, int32_t d, uint8_t *sync)
{
    for (int32_t r = 0; r < st->sim->p; r++)
        sync[r] = (uint8_t)rank_synced(st, d, r);
}

/* Does the step have any reduction (the pass then needs programs as
 * arrays)? */
static int needs_sync(const par_step *st)
{
    int32_t d = st->sim->unfolded[PAR_DP] * st->sim->unfolded[PAR_CP];
    for (int32_t f = 0; f < st->nfinalize; f++)
        if (st->finalize[f].r0 != st->finalize[f].r1)
            return 1;
    return d > 1;
}

int32_t par_dp_ranks_per_node(const par_step *st)
{
    const par_sim *sim = st->sim;
    unsigned mask = PAR_BIT(PAR_DP) | PAR_BIT(PAR_CP);
    int32_t d = sim->unfolded[PAR_DP] * sim->unfolded[PAR_CP];
    if (st->gpus_per_node < 2 || d < 2)
        return 0;
    int32_t *inst = malloc((size_t)d * 2 * sizeof *inst);
    if (!inst)
        return 0; /* one ring per group: the conservative model */
    int32_t *group = inst + d, rpn = -1;
    for (int32_t i = 0; i < sim->n && rpn != 0; i++) {
        if (!par_sim_group_head(sim, mask, i))
            continue;
        par_sim_group(sim, mask, i, inst);
        for (int32_t r = 0; r < sim->p && rpn != 0; r++) {
            for (int32_t j = 0; j < d; j++)
                group[j] = sim->rank_of[inst[j] * sim->p + r];
            int32_t g = coll_ranks_per_node(st->gpus_per_node, group, d);
            rpn = rpn < 0 || rpn == g ? g : 0;
        }
    }
    free(inst);
    return rpn < 0 ? 0 : rpn;
}

/* Pushes op onto lane. */
static int push_op(prog_set *ps, int32_t lane, prog_op op, ps_err *err)
{
    return prog_push(ps, lane, &op) ? ps_errf(err, "out of memory") : PS_OK;
}

/* The group of instance i over dp and cp, for pipeline rank r: its
 * communication lanes and cluster ranks in w->lanes, w->ranks. */
static void group_lanes(const dp_config *c, dp_work *w, int32_t i, int32_t r)
{
    const par_sim *sim = c->st->sim;
    par_sim_group(sim, PAR_BIT(PAR_DP) | PAR_BIT(PAR_CP), i, w->group);
    for (int32_t j = 0; j < c->d; j++) {
        w->lanes[j] = w->comm[w->group[j] * c->p + r];
        w->ranks[j] = sim->rank_of[w->group[j] * c->p + r];
    }
}

/* With pg, the previous step's all-gathers of rank r's group (w->lanes),
 * bucket by bucket in the forward's order (order): a chunk's buckets back
 * to back once the chunk is dispatched (dispatch_points: the signal
 * reached of its first bucket), then each bucket's signal gathered. */
static int lower_gathers(const dp_config *c, par_step *st, dp_work *w,
                         int32_t r, const int32_t *order, ps_err *err)
{
    const plan *pl = &w->plans[r];
    int rc = PS_OK;
    for (int32_t q = 0; q < pl->n && rc == PS_OK; q++) {
        for (int32_t j = 0; chunk_start(pl, order, q) && j < c->d; j++) {
            int32_t base = signal_base(c, w, w->group[j], r);
            if (push_op(st->ps, w->lanes[j],
                        prog_signal(PROG_WAIT, base + 2 * pl->n + 2 + q), err))
                return PS_ERR;
        }
        rc = group_collective(st, &w->forks, w->lanes, w->ranks, c->d,
                              c->ranks_per_node, COLL_ALLGATHER,
                              pl->b[order[q]].params * c->weight_bytes,
                              order[q], err);
        for (int32_t j = 0; j < c->d && rc == PS_OK; j++)
            rc = push_op(
                st->ps, w->lanes[j],
                prog_signal(PROG_SIGNAL,
                            signal_base(c, w, w->group[j], r) + pl->n + 2 + q),
                err);
    }
    return rc;
}

/* Rank r's data-parallel collectives in every group: with pg the
 * all-gathers first, then each bucket's reduction once every instance's
 * backward made it. */
static int lower_buckets(const dp_config *c, par_step *st, dp_work *w,
                         int32_t r, ps_err *err)
{
    const plan *pl = &w->plans[r];
    int32_t *scratch = w->ready + 3 * w->most, *order = scratch + 2 * c->v;
    unsigned mask = PAR_BIT(PAR_DP) | PAR_BIT(PAR_CP);
    int rc = PS_OK;
    if (c->pg)
        forward_order(&st->ps->lanes[r], pl, c->v, scratch, scratch + c->v,
                      order);
    for (int32_t i = 0; i < c->n && rc == PS_OK; i++) {
        if (!par_sim_group_head(st->sim, mask, i))
            continue;
        group_lanes(c, w, i, r);
        if (c->pg)
            rc = lower_gathers(c, st, w, r, order, err);
        for (int32_t k = 0; k < pl->n && rc == PS_OK; k++) {
            for (int32_t j = 0; j < c->d && rc == PS_OK; j++)
                rc = push_op(st->ps, w->lanes[j],
                             prog_signal(PROG_WAIT,
                                         signal_base(c, w, w->group[j], r) + k),
                             err);
            if (rc == PS_OK)
                rc = group_collective(
                    st, &w->forks, w->lanes, w->ranks, c->d, c->ranks_per_node,
                    c->zero ? COLL_REDUCE_SCATTER : COLL_ALLREDUCE,
                    pl->b[k].bytes, k, err);
        }
    }
    return rc;
}

/* Finalize reduction f on every instance: its two ranks' communication
 * lanes, once each has its gradients (with no data-parallel peers they
 * wait for their ranks' buckets, raised at the backward's end). */
static int lower_finalize(const dp_config *c, par_step *st, dp_work *w,
                          const par_finalize *f, ps_err *err)
{
    int rc = PS_OK;
    for (int32_t i = 0; i < c->n && rc == PS_OK; i++) {
        const int32_t rr[2] = {f->r0, f->r1};
        for (int x = 0; x < 2 && rc == PS_OK; x++) {
            w->lanes[x] = w->comm[i * c->p + rr[x]];
            w->ranks[x] = st->sim->rank_of[i * c->p + rr[x]];
            for (int32_t k = 0; c->d == 1 && k < w->plans[rr[x]].n; k++)
                if ((rc = push_op(st->ps, w->lanes[x],
                                  prog_signal(PROG_WAIT,
                                              signal_base(c, w, i, rr[x]) + k),
                                  err)))
                    break;
        }
        if (rc == PS_OK)
            rc = group_collective(st, &w->forks, w->lanes, w->ranks, 2, 0,
                                  COLL_ALLREDUCE, f->bytes, -1, err);
    }
    return rc;
}

/* Rank q's end of the sync on every instance: SIGNAL(synced), then with
 * ZeRO-1 (not pg) the wait for the update and the all-gathers of the
 * updated shards. */
static int lower_synced(const dp_config *c, par_step *st, dp_work *w, int32_t q,
                        ps_err *err)
{
    const plan *pl = &w->plans[q];
    int rc = PS_OK;
    for (int32_t i = 0; i < c->n && rc == PS_OK; i++) {
        int32_t lane = w->comm[i * c->p + q], base = signal_base(c, w, i, q);
        rc = push_op(st->ps, lane, prog_signal(PROG_SIGNAL, base + pl->n), err);
        if (rc == PS_OK && c->zero && !c->pg)
            rc = push_op(st->ps, lane, prog_signal(PROG_WAIT, base + pl->n + 1),
                         err);
    }
    unsigned mask = PAR_BIT(PAR_DP) | PAR_BIT(PAR_CP);
    for (int32_t i = 0; c->zero && !c->pg && i < c->n && rc == PS_OK; i++) {
        if (!par_sim_group_head(st->sim, mask, i))
            continue;
        group_lanes(c, w, i, q);
        for (int32_t k = 0; k < pl->n && rc == PS_OK; k++)
            rc = group_collective(st, &w->forks, w->lanes, w->ranks, c->d,
                                  c->ranks_per_node, COLL_ALLGATHER,
                                  pl->b[k].params * c->weight_bytes, k, err);
    }
    return rc;
}

/* Bucket plans per pipeline rank, in the order the rank's last backwards
 * run (the same in every instance), and the work arrays sized by them. */
static int plan_buckets(const dp_config *c, const prog_set *ps, dp_work *w)
{
    int32_t p = c->p, nsim = c->n * p, d = c->d > 2 ? c->d : 2;
    w->plans = calloc((size_t)p, sizeof *w->plans);
    w->ready_base = calloc((size_t)p, sizeof *w->ready_base);
    w->comm = malloc((size_t)nsim * sizeof *w->comm);
    w->lanes = malloc((size_t)d * sizeof *w->lanes);
    w->ranks = malloc((size_t)d * sizeof *w->ranks);
    w->group = malloc((size_t)d * sizeof *w->group);
    w->last = malloc(((size_t)c->v + 1) * sizeof *w->last);
    if (!w->plans || !w->ready_base || !w->comm || !w->lanes || !w->ranks ||
        !w->group || !w->last)
        return -1;
    for (int32_t r = 0; r < p; r++) {
        const prog_lane *lane = &ps->lanes[r];
        last_backwards(lane, c->v, w->last);
        for (int32_t i = 0; i < lane->n; i++) {
            const prog_op *op = &lane->ops[i];
            if (is_last_backward(lane, w->last, i) &&
                plan_chunk(c, r, op->stage, op->chunk, &w->plans[r]))
                return -1;
        }
        if (w->plans[r].n > w->most)
            w->most = w->plans[r].n;
    }
    /* ready, then with pg gathered and reached: most each; and
     * rewrite_lane's scratch, 3v + most */
    w->ready = malloc(((size_t)3 * w->most + 3 * c->v + w->most + 1) *
                      sizeof *w->ready);
    return w->ready ? 0 : -1;
}

/* Signals and the rewritten compute lanes of every simulated rank. */
static int rewrite_lanes(const dp_config *c, prog_set *ps, dp_work *w)
{
    int32_t most = w->most;
    int32_t *gathered = w->ready + most, *reached = w->ready + 2 * most;
    for (int32_t r = 0; r < c->p; r++) {
        w->ready_base[r] = ps->nsignals;
        ps->nsignals += c->n * signal_stride(c, w->plans[r].n);
    }
    for (int32_t i = 0; i < c->n; i++)
        for (int32_t r = 0; r < c->p; r++) {
            int32_t nb = w->plans[r].n, base = signal_base(c, w, i, r);
            for (int32_t k = 0; k < nb; k++) {
                w->ready[k] = base + k;
                gathered[k] = base + nb + 2 + k;
                reached[k] = base + 2 * nb + 2 + k;
            }
            if (rewrite_lane(c, &ps->lanes[i * c->p + r], &w->plans[r],
                             w->ready, base + nb, base + nb + 1, r, w->last,
                             c->pg ? gathered : NULL, c->pg ? reached : NULL,
                             w->ready + 3 * most))
                return -1;
        }
    return 0;
}

/* Buckets a step may plan: a bucket is a collective with lanes and
 * signals, so a size that cuts the model into more is a slip (25 for "25
 * MB"), refused before the plan is made. */
#define DP_MAX_BUCKETS (1 << 20)

/* Fails, naming grad_sync.bucket, when cutting the gradients of the
 * stages into buckets would make more than DP_MAX_BUCKETS. */
static int check_bucket_count(const dp_config *c, const par_step *st,
                              ps_err *err)
{
    double bytes = 0;
    for (int32_t s = 0; s < st->nstages; s++)
        for (int32_t i = c->first[s]; i < c->first[s] + c->count[s]; i++)
            bytes += c->layer_params[i] * c->grad_bytes;
    double n = bytes / c->bucket_bytes + st->nstages;
    if (!(n <= DP_MAX_BUCKETS))
        return ps_errf(err,
                       "grad_sync.bucket: %g bytes cut the model's %g bytes of "
                       "gradients into more than %d buckets (a size in bytes: "
                       "\"25 MB\", not 25)",
                       c->bucket_bytes, bytes, DP_MAX_BUCKETS);
    return PS_OK;
}

/* The pipeline rank after whose collectives rank q's sync ends: q, or
 * the later rank of a finalize reduction q takes part in. */
static int32_t sync_end(const par_step *st, int32_t q)
{
    int32_t at = q;
    for (int32_t f = 0; f < st->nfinalize; f++) {
        const par_finalize *x = &st->finalize[f];
        int32_t hi = x->r0 > x->r1 ? x->r0 : x->r1;
        if ((x->r0 == q || x->r1 == q) && x->r0 != x->r1 && hi > at)
            at = hi;
    }
    return at;
}

/* The communication of every rank, rank by rank: its buckets, the
 * finalize reductions its rank completes, and the end of the sync of
 * each rank that has all its reductions then. Without finalize
 * reductions each rank's sync ends right after its buckets. */
static int lower_comm(const dp_config *c, par_step *st, dp_work *w, ps_err *err)
{
    int rc = PS_OK;
    for (int32_t r = 0; r < c->p && rc == PS_OK; r++) {
        if (c->d > 1)
            rc = lower_buckets(c, st, w, r, err);
        for (int32_t f = 0; f < st->nfinalize && rc == PS_OK; f++) {
            const par_finalize *x = &st->finalize[f];
            if (x->r0 != x->r1 && (x->r0 > x->r1 ? x->r0 : x->r1) == r)
                rc = lower_finalize(c, st, w, x, err);
        }
        for (int32_t q = 0; q <= r && rc == PS_OK; q++)
            if (w->sync[q] && sync_end(st, q) == r)
                rc = lower_synced(c, st, w, q, err);
    }
    return rc;
}

static int dp_lower(par_step *st, ps_err *err)
{
    const par_sim *sim = st->sim;
    int32_t p = sim->p, d = sim->unfolded[PAR_DP] * sim->unfolded[PAR_CP];
    if (!needs_sync(st) && !(st->dp.optimizer_seconds > 0))
        return PS_OK; /* nothing to add: no OPT op either */
    if (d > 1 && !(st->dp.bucket_bytes > 0 && st->dp.first_bucket_bytes > 0))
        return ps_errf(err, "grad_sync: bucket sizes must be positive");
    if (st->ps->nlanes < sim->n * p)
        return ps_errf(err, "dp: expected %d compute lanes, found %d",
                       (int)(sim->n * p), (int)st->ps->nlanes);
    dp_work w = {0};
    dp_config c;
    int rc = PS_OK;
    w.sync = malloc((size_t)p);
    if (w.sync) {
        sync_ranks(st, d, w.sync);
        configure(&c, st, w.sync);
    }
    if (w.sync && d > 1 && check_bucket_count(&c, st, err))
        rc = PS_ERR;
    else if (!w.sync || plan_buckets(&c, st->ps, &w) ||
             rewrite_lanes(&c, st->ps, &w))
        rc = ps_errf(err, "out of memory");
    /* communication lanes, in simulated-rank order */
    for (int32_t k = 0; rc == PS_OK && k < sim->n * p; k++) {
        w.comm[k] = -1;
        if (w.sync[k % p] &&
            (w.comm[k] = prog_add_lane(st->ps, sim->rank_of[k])) < 0)
            rc = ps_errf(err, "out of memory");
    }
    if (rc == PS_OK)
        rc = lower_comm(&c, st, &w, err);
    work_free(&w, p);
    return rc;
}

/* After the engine ran: per compute lane with a sync, the seconds from
 * its WAIT(synced) to its OPT (the lane ends WAIT(synced), OPT[,
 * SIGNAL(updated)]), plus the forward's waits for overlap_param_gather's
 * all-gathers, plus with ZeRO-1 the all-gather that follows the
 * optimizer step. */
static void dp_exposed(const par_step *st, double *exposed)
{
    const par_sim *sim = st->sim;
    int32_t p = sim->p, n = sim->n * p;
    int32_t d = sim->unfolded[PAR_DP] * sim->unfolded[PAR_CP];
    int zero = st->layout->s.shard == PAR_SHARD_OPTIMIZER && d > 1;
    const prog_set *ps = st->ps;
    int32_t comm = n; /* communication lanes follow, one per synced rank */
    if (!needs_sync(st))
        return;
    for (int32_t l = 0; l < n; l++) {
        const prog_lane *lane = &ps->lanes[l];
        if (!rank_synced(st, d, l % p))
            continue;
        const prog_lane *cl = &ps->lanes[comm++];
        if (lane->n < 2)
            continue;
        int32_t opt = lane->n - 1 - (zero ? 1 : 0);
        const prog_op *o = &lane->ops[opt], *w = &lane->ops[opt - 1];
        if (isnan(exposed[l]))
            exposed[l] = 0;
        exposed[l] += o->t_start - w->t_start;
        for (int32_t i = 0; i < lane->n; i++)
            if (lane->ops[i].type == PROG_WAIT &&
                lane->ops[i].tag == DP_TAG_GATHER)
                exposed[l] += lane->ops[i].t_end - lane->ops[i].t_start;
        double end = cl->n ? cl->ops[cl->n - 1].t_end : o->t_end;
        if (zero && end > o->t_end)
            exposed[l] += end - o->t_end;
    }
}

/* Static memory: weights, gradients and optimizer state of each
 * simulated rank's parameters (ZeRO paper accounting, Rajbhandari et al.
 * 2020: 2 + 2 + 12 bytes per parameter for bf16 mixed precision with
 * Adam); ZeRO-1 keeps 1/shard of the optimizer state. DualPipe holds each
 * stage twice: the second copy on rank p - 1 - s. */
static void dp_memory(const par_step *st, double *rank_static)
{
    const par_sim *sim = st->sim;
    const par_layout *L = st->layout;
    int32_t shard = L->s.shard_group > 0 ? L->s.shard_group : L->s.dp * L->s.cp;
    int zero = L->s.shard == PAR_SHARD_OPTIMIZER && shard > 1;
    double per_param = st->weight_bytes + st->grad_bytes +
                       st->optimizer_bytes / (zero ? shard : 1);
    int32_t p = sim->p;
    for (int32_t s = 0; s < st->nstages; s++) {
        int32_t r =
            sched_place_rank(st->sched.placement, st->sched.place, p, s);
        for (int32_t i = 0; i < sim->n; i++) {
            rank_static[sim->rank_of[i * p + r]] +=
                st->stage_params[s] * per_param;
            if (st->sched.kind == SCHED_DUALPIPE)
                rank_static[sim->rank_of[i * p + p - 1 - s]] +=
                    st->stage_params[s] * per_param;
        }
    }
}

static int dp_arrays(const par_step *st)
{
    return needs_sync(st);
}

const par_pass par_dp_pass = {
    .name = "dp",
    .arrays = dp_arrays,
    .lower = dp_lower,
    .memory = dp_memory,
    .exposed = dp_exposed,
};
