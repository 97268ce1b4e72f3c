/* The ep pass (par/ep.h): each expert-parallel group's compute lanes
 * rewritten in lockstep (the group's ranks run one schedule, so their
 * ops correspond one to one), every MoE layer's all-to-alls put between
 * its compute pieces as batched sends and receives to each other rank of
 * the group (NCCL's all-to-all is a group of ncclSend/ncclRecv, one per
 * peer: Megatron-LM's all_to_all in core/tensor_parallel/mappings.py
 * calls torch.distributed.all_to_all_single). O(ops + group sizes^2 x
 * all-to-alls). */
#include "par/ep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"

void par_ep_state_free(par_ep_state *s)
{
    prog_free(s->stash);
    free(s->comm);
    memset(s, 0, sizeof *s);
}

/* The layers of the model (first and count of the last stage). */
static int32_t model_layers(const par_step *st)
{
    int32_t last = st->nstages - 1;
    return st->first[last] + st->count[last];
}

static int is_moe(const par_moe *m)
{
    return m->dispatch_bytes > 0 || m->combine_bytes > 0;
}

static int stage_has_moe(const par_step *st, int32_t s)
{
    for (int32_t i = st->first[s]; i < st->first[s] + st->count[s]; i++)
        if (is_moe(&st->ep.layers[i]))
            return 1;
    return 0;
}

/* Does the step have all-to-alls: ep > 1 and a MoE layer? */
static int ep_active(const par_step *st)
{
    if (st->layout->s.ep < 2 || !st->ep.layers)
        return 0;
    for (int32_t i = 0, n = model_layers(st); i < n; i++)
        if (is_moe(&st->ep.layers[i]))
            return 1;
    return 0;
}

static int ep_arrays(const par_step *st)
{
    return ep_active(st) || par_ep_sync_applies(st);
}

/* One expert-parallel group's rewrite: its lanes (e of them), their old
 * ops, where each lane's pieces of the current op begin. */
typedef struct group {
    par_step *st;
    int32_t e;
    const int32_t *lane; /* compute lanes */
    prog_op **old;       /* e: the lanes' ops before the rewrite */
    int32_t *first;      /* e: index of the current op's first piece */
    double *est;         /* 4 per layer: combined pairs' all-to-all estimates */
    double *bytes;       /* e: scratch for them */
    int32_t *peer, *key;
} group;

static int push(prog_set *ps, int32_t lane, prog_op op, ps_err *err)
{
    return prog_push(ps, lane, &op) ? ps_errf(err, "out of memory") : PS_OK;
}

/* The bytes rank a sends rank b in an exchange of `bytes` per rank under
 * m's dispatcher: an all-to-all's even share of the e - 1 peers, or the
 * flex dispatcher's (DeepEP's normal kernels, deepseek-ai/DeepEP
 * csrc/kernels/internode.cu b805c0e: a token crosses RDMA once per
 * destination node, to the GPU of the sender's local index there, which
 * forwards it over NVLink to the node's destination GPUs): the NVLink
 * share to a peer on a's node, the RDMA share to the peer of a's local
 * index on another node, nothing to the rest. */
static double pair_bytes(const group *g, const par_moe *m, double bytes,
                         int32_t a, int32_t b)
{
    if (!(m->flex_nvl > 0 || m->flex_rdma > 0))
        return bytes / (g->e - 1);
    int32_t gpn = g->st->gpus_per_node > 1 ? g->st->gpus_per_node : INT32_MAX;
    if (a / gpn == b / gpn)
        return bytes * m->flex_nvl;
    return a % gpn == b % gpn ? bytes * m->flex_rdma : 0;
}

/* One all-to-all of `bytes` per rank (pair_bytes: even over its e - 1
 * peers, or the flex dispatcher's) on the lanes (compute lanes, or the
 * stash's lanes of the same indices when stash is set), microbatch mb:
 * each rank's sends then its receives, one batch the lane waits for
 * whole. */
static int alltoall(group *g, prog_set *ps, const par_moe *m, double bytes,
                    int32_t mb, ps_err *err)
{
    int32_t e = g->e;
    if (!(bytes > 0))
        return PS_OK;
    int32_t base = g->st->ps->nmsgs;
    if ((int64_t)base + (int64_t)e * (e - 1) > INT32_MAX)
        return ps_errf(err, "the all-to-alls need more than 2^31 messages");
    g->st->ps->nmsgs += e * (e - 1);
    for (int32_t j = 0; j < e; j++) {
        int32_t before = ps->lanes[g->lane[j]].n;
        for (int recv = 0; recv < 2; recv++)
            for (int32_t k = 0; k < e; k++) {
                if (k == j)
                    continue;
                int32_t peer = g->st->ps->lanes[g->lane[k]].rank;
                int32_t me = g->st->ps->lanes[g->lane[j]].rank;
                double each = recv ? pair_bytes(g, m, bytes, peer, me)
                                   : pair_bytes(g, m, bytes, me, peer);
                if (!(each > 0))
                    continue;
                /* message a -> b: base + a (e - 1) + b's place among a's
                 * peers */
                int32_t from = recv ? k : j, to = recv ? j : k;
                int32_t msg = base + from * (e - 1) + (to < from ? to : to - 1);
                prog_op op =
                    recv
                        ? prog_recv(peer, msg, each, PROG_COLL, mb, PROG_BATCH)
                        : prog_send(peer, msg, each, PROG_COLL, mb, PROG_BATCH);
                op.tag = PAR_EP_TAG;
                if (push(ps, g->lane[j], op, err))
                    return PS_ERR;
            }
        /* the batch ends with the last receive: the lane waits for all
         * (a flex rank with no peer in this group has none) */
        prog_lane *l = &ps->lanes[g->lane[j]];
        if (l->n > before)
            l->ops[l->n - 1].flags = 0;
    }
    return PS_OK;
}

/* A compute piece of op i (the old op's kind, stage, chunk, mb) lasting
 * frac of it on every lane; its memory goes to the first piece when
 * allocated, to the last when freed (piece_mem). */
static int piece(group *g, int32_t i, double frac, ps_err *err)
{
    for (int32_t j = 0; j < g->e; j++) {
        prog_op op = g->old[j][i];
        op.seconds *= frac;
        op.mem = 0;
        if (push(g->st->ps, g->lane[j], op, err))
            return PS_ERR;
    }
    return PS_OK;
}

/* After op i's pieces: its memory on the first piece (allocation, at
 * the start) or the last (release, at the end). */
static void piece_mem(group *g, int32_t i)
{
    for (int32_t j = 0; j < g->e; j++) {
        prog_lane *lane = &g->st->ps->lanes[g->lane[j]];
        double mem = g->old[j][i].mem;
        int32_t at = mem > 0 ? g->first[j] : lane->n - 1;
        while (mem < 0 && lane->ops[at].type != PROG_COMPUTE)
            at--;
        lane->ops[at].mem = mem;
    }
}

/* The bytes of a layer's first and second all-to-all in a forward or a
 * backward (par_moe). */
static double first_a2a(const par_moe *m, int bwd)
{
    return bwd ? m->dispatch_grad_bytes : m->dispatch_bytes;
}

static double second_a2a(const par_moe *m, int bwd)
{
    return bwd ? m->combine_grad_bytes : m->combine_bytes;
}

/* The stage's forward (or backward) seconds on instance 0's devices. */
static double stage_total(const par_step *st, int32_t s, int bwd)
{
    double t = 0;
    for (int32_t i = st->first[s]; i < st->first[s] + st->count[s]; i++)
        t += bwd ? st->layer_bwd[i] : st->ep.layer_fwd[i];
    return t;
}

/* Op i (an F, B or a lone FB half of a stage with MoE layers) cut at
 * every all-to-all of its layers (walked last to first in a backward),
 * the all-to-alls in place on the compute lanes. */
static int split_op(group *g, int32_t i, ps_err *err)
{
    const par_step *st = g->st;
    const prog_op *op = &g->old[0][i];
    int bwd = op->kind == PROG_B || op->kind == PROG_FB_B;
    int32_t s = op->stage, lo = st->first[s], hi = lo + st->count[s] - 1;
    double total = stage_total(st, s, bwd), acc = 0;
    if (!(total > 0))
        total = 1;
    for (int32_t j = 0; j < g->e; j++)
        g->first[j] = st->ps->lanes[g->lane[j]].n;
    for (int32_t k = 0; k <= hi - lo; k++) {
        int32_t l = bwd ? hi - k : lo + k;
        const par_moe *m = &st->ep.layers[l];
        double whole = bwd ? st->layer_bwd[l] : st->ep.layer_fwd[l];
        if (!is_moe(m)) {
            acc += whole;
            continue;
        }
        double pre = bwd ? m->bwd_pre : m->fwd_pre;
        double mid = bwd ? m->bwd_expert : m->fwd_expert;
        /* forward: dispatch then combine; backward: the combine's
         * gradient (the dispatch way) then the dispatch's */
        if (piece(g, i, (acc + pre) / total, err) ||
            alltoall(g, st->ps, m, first_a2a(m, bwd), op->mb, err) ||
            piece(g, i, mid / total, err) ||
            alltoall(g, st->ps, m, second_a2a(m, bwd), op->mb, err))
            return PS_ERR;
        acc = fmax(0, whole - pre - mid);
    }
    if (piece(g, i, acc / total, err))
        return PS_ERR;
    piece_mem(g, i);
    return PS_OK;
}

/* The all-to-alls of op's stage (forward or backward order) on the
 * stash's lanes. */
static int stage_alltoalls(group *g, const prog_op *op, ps_err *err)
{
    const par_step *st = g->st;
    int bwd = op->kind == PROG_FB_B;
    int32_t lo = st->first[op->stage], hi = lo + st->count[op->stage] - 1;
    for (int32_t k = 0; k <= hi - lo; k++) {
        const par_moe *m = &st->ep.layers[bwd ? hi - k : lo + k];
        if (is_moe(m) && (alltoall(g, st->ep.state->stash, m, first_a2a(m, bwd),
                                   op->mb, err) ||
                          alltoall(g, st->ep.state->stash, m,
                                   second_a2a(m, bwd), op->mb, err)))
            return PS_ERR;
    }
    return PS_OK;
}

/* An overlapped pair (FB_F at i, FB_B at i + 1): the compute slowed by
 * the SMs the communication takes, its all-to-alls on the lanes'
 * communication lanes from the pair's start, its end waiting for them. */
static int overlap_pair(group *g, int32_t i, ps_err *err)
{
    par_step *st = g->st;
    prog_set *stash = st->ep.state->stash;
    double slow = 1 / (1 - st->ep.comm_share);
    int32_t sig = st->ps->nsignals;
    st->ps->nsignals += 2 * g->e;
    for (int32_t j = 0; j < g->e; j++) {
        prog_op w = prog_signal(PROG_WAIT, sig + 2 * j + 1);
        w.tag = PAR_EP_TAG;
        if (push(st->ps, g->lane[j], prog_signal(PROG_SIGNAL, sig + 2 * j),
                 err) ||
            push(stash, g->lane[j], prog_signal(PROG_WAIT, sig + 2 * j), err))
            return PS_ERR;
        for (int h = 0; h < 2; h++) {
            prog_op op = g->old[j][i + h];
            op.seconds *= slow;
            if (push(st->ps, g->lane[j], op, err))
                return PS_ERR;
        }
        if (push(st->ps, g->lane[j], w, err))
            return PS_ERR;
    }
    if (stage_alltoalls(g, &g->old[0][i], err) ||
        stage_alltoalls(g, &g->old[0][i + 1], err))
        return PS_ERR;
    for (int32_t j = 0; j < g->e; j++)
        if (push(stash, g->lane[j], prog_signal(PROG_SIGNAL, sig + 2 * j + 1),
                 err))
            return PS_ERR;
    return PS_OK;
}

/* Do op i of every lane of the group correspond (same type, kind, stage,
 * microbatch)? */
static int same_op(const group *g, int32_t i)
{
    const prog_op *a = &g->old[0][i];
    for (int32_t j = 1; j < g->e; j++) {
        const prog_op *b = &g->old[j][i];
        if (a->type != b->type ||
            (a->type == PROG_COMPUTE &&
             (a->kind != b->kind || a->stage != b->stage || a->mb != b->mb)))
            return 0;
    }
    return 1;
}

static int has_moe(const par_step *st, const prog_op *op)
{
    return op->type == PROG_COMPUTE && op->stage >= 0 &&
           op->stage < st->nstages && stage_has_moe(st, op->stage);
}

/* Megatron-LM's combined 1F1B (overlap_moe_expert_parallel_comm,
 * Megatron-Core 0.14 on: pipeline_parallel/combined_1f1b.py,
 * models/common/model_chunk_schedule_plan.py; checked against d98e8a64dd,
 * 0.20.0): in the steady state the forward of one microbatch and the
 * backward of another run as one step, layer by layer, each one's
 * dispatch and combine on the communication stream beside the other's
 * attention and MLP compute. Ops i and i + 1 are such a pair when they
 * are a forward and a backward of different units next to each other
 * on the lane: interleaved 1F1B's steady-state F(k + warmup) B(k) (one
 * step, sched/sched.c order_interleaved), or without a pipeline B(k)
 * F(k + 1) (combined_1f1b_schedule_for_no_pipelining runs F(0), then
 * F(k + 1) with B(k), then B(m - 1)). */
static int combined_pair(const group *g, int32_t i, int32_t n)
{
    if (!g->st->ep.overlap || i + 1 >= n)
        return 0;
    const prog_op *a = &g->old[0][i], *b = &g->old[0][i + 1];
    if (a->type != PROG_COMPUTE || b->type != PROG_COMPUTE ||
        !((a->kind == PROG_F && b->kind == PROG_B) ||
          (a->kind == PROG_B && b->kind == PROG_F)) ||
        (a->stage == b->stage && a->mb == b->mb) || !same_op(g, i + 1))
        return 0;
    return has_moe(g->st, a) || has_moe(g->st, b);
}

/* Signal base + k e + j (k: which of a layer pair's eight, j: the lane)
 * raised (PROG_SIGNAL) or waited for on every lane of the group, on the
 * compute lanes (ps) or the all-to-all lanes (the stash); a compute
 * lane's wait is the all-to-all it exposes (ep_exposed). */
static int sync_op(group *g, prog_set *ps, enum prog_type type, int32_t base,
                   int k, ps_err *err)
{
    for (int32_t j = 0; j < g->e; j++) {
        prog_op op = prog_signal(type, base + k * g->e + j);
        if (type == PROG_WAIT && ps == g->st->ps)
            op.tag = PAR_EP_TAG;
        if (push(ps, g->lane[j], op, err))
            return PS_ERR;
    }
    return PS_OK;
}

/* One layer of a combined pair's side: its op, its layer (-1: none),
 * the stage's seconds, and its pieces before, between and after its two
 * all-to-alls (a dense layer: all of it before, none). */
typedef struct side {
    int32_t op, layer;
    int bwd, moe;
    double total, pre, mid, rest;
} side;

static side side_of(const group *g, int32_t op, int32_t layer, int bwd)
{
    const par_step *st = g->st;
    side d = {op, layer, bwd, 0, 0, 0, 0, 0};
    d.total = stage_total(st, g->old[0][op].stage, bwd);
    if (!(d.total > 0))
        d.total = 1;
    if (layer < 0)
        return d;
    const par_moe *m = &st->ep.layers[layer];
    double whole = bwd ? st->layer_bwd[layer] : st->ep.layer_fwd[layer];
    d.moe = is_moe(m);
    d.pre = d.moe ? (bwd ? m->bwd_pre : m->fwd_pre) : whole;
    d.mid = d.moe ? (bwd ? m->bwd_expert : m->fwd_expert) : 0;
    d.rest = fmax(0, whole - d.pre - d.mid);
    return d;
}

/* Side d's first (second) all-to-all's seconds alone on the group's
 * first lane (par_ep_a2a_estimate), once per layer and kind. */
static double a2a_est(group *g, const side *d, int second)
{
    double *at = &g->est[4 * d->layer + 2 * d->bwd + second];
    if (*at >= 0)
        return *at;
    const par_step *st = g->st;
    const par_moe *m = &st->ep.layers[d->layer];
    double bytes = second ? second_a2a(m, d->bwd) : first_a2a(m, d->bwd);
    int32_t me = st->ps->lanes[g->lane[0]].rank;
    for (int32_t k = 0; k < g->e; k++) {
        g->peer[k] = st->ps->lanes[g->lane[k]].rank;
        g->bytes[k] = k ? pair_bytes(g, m, bytes, me, g->peer[k]) : 0;
    }
    *at = par_ep_a2a_estimate(st->nw, me, g->peer, g->bytes, g->e, g->key,
                              g->bytes + g->e);
    return *at;
}

/* A piece of side d (seconds t) beside an all-to-all of about tc seconds
 * (0: none): the all-to-all's kernels take comm_share of the SMs while
 * they run, so the compute loses that share of tc, t + share tc, or runs
 * slowed whole, t / (1 - share), when the all-to-all outlasts it. */
static int side_piece(group *g, const side *d, double t, double tc, ps_err *err)
{
    double s = g->st->ep.comm_share;
    double x = tc > 0 ? fmin(t + s * tc, t / (1 - s)) : t;
    return d->layer >= 0 && t > 0 ? piece(g, d->op, x / d->total, err) : PS_OK;
}

/* Side d's first (second) all-to-all on the all-to-all lanes, after the
 * compute lanes' signal wait_k, raising raise_k when done. */
static int side_a2a(group *g, const side *d, int second, int32_t base,
                    int wait_k, int raise_k, ps_err *err)
{
    prog_set *stash = g->st->ep.state->stash;
    const par_moe *m = &g->st->ep.layers[d->layer];
    double bytes = second ? second_a2a(m, d->bwd) : first_a2a(m, d->bwd);
    return sync_op(g, stash, PROG_WAIT, base, wait_k, err) ||
                   alltoall(g, stash, m, bytes, g->old[0][d->op].mb, err) ||
                   sync_op(g, stash, PROG_SIGNAL, base, raise_k, err)
               ? PS_ERR
               : PS_OK;
}

/* One layer pair of a combined step, as Megatron-LM's
 * TransformerLayerSchedulePlan.run orders it (models/common/
 * model_chunk_schedule_plan.py, d98e8a64dd): the forward layer's
 * attention beside the backward layer's combine gradient, the backward's
 * experts beside the forward's dispatch, the forward's experts beside the
 * backward's dispatch gradient, the backward's attention beside the
 * forward's combine; each all-to-all waits for the compute that makes
 * its input, each compute for the all-to-all that makes its own. Signals
 * 0-3: compute done (b's first, f's first, b's second, f's second
 * all-to-all may start); 4-7: those all-to-alls done. */
static int layer_pair(group *g, const side *f, const side *b, ps_err *err)
{
    prog_set *ps = g->st->ps;
    int32_t base = ps->nsignals;
    if ((int64_t)base + 8 * (int64_t)g->e > INT32_MAX)
        return ps_errf(err, "the combined pairs need more than 2^31 signals");
    ps->nsignals += 8 * g->e;
    int fm = f->layer >= 0 && f->moe, bm = b->layer >= 0 && b->moe;
    double f1 = fm ? a2a_est(g, f, 0) : 0, f2 = fm ? a2a_est(g, f, 1) : 0;
    double b1 = bm ? a2a_est(g, b, 0) : 0, b2 = bm ? a2a_est(g, b, 1) : 0;
    if (side_piece(g, b, b->pre, 0, err) ||
        (bm && sync_op(g, ps, PROG_SIGNAL, base, 0, err)) ||
        side_piece(g, f, f->pre, b1, err) ||
        (fm && sync_op(g, ps, PROG_SIGNAL, base, 1, err)) ||
        (bm && (sync_op(g, ps, PROG_WAIT, base, 4, err) ||
                side_piece(g, b, b->mid, f1, err) ||
                sync_op(g, ps, PROG_SIGNAL, base, 2, err))) ||
        (fm && (sync_op(g, ps, PROG_WAIT, base, 5, err) ||
                side_piece(g, f, f->mid, b2, err) ||
                sync_op(g, ps, PROG_SIGNAL, base, 3, err))) ||
        (bm && (sync_op(g, ps, PROG_WAIT, base, 6, err) ||
                side_piece(g, b, b->rest, f2, err))) ||
        (fm && (sync_op(g, ps, PROG_WAIT, base, 7, err) ||
                side_piece(g, f, f->rest, 0, err))))
        return PS_ERR;
    return (bm && side_a2a(g, b, 0, base, 0, 4, err)) ||
                   (fm && side_a2a(g, f, 0, base, 1, 5, err)) ||
                   (bm && side_a2a(g, b, 1, base, 2, 6, err)) ||
                   (fm && side_a2a(g, f, 1, base, 3, 7, err))
               ? PS_ERR
               : PS_OK;
}

/* One layer pair's share of the memory of the pair's forward (op fi, one
 * of nf layers) and backward (bi, one of nb) on the pieces each lane got
 * from g->first on: the forward allocates its layer's share when its
 * layer's first piece starts, the backward frees its share when its
 * layer's last piece ends, so the two microbatches' activations trade
 * places layer by layer as Megatron's layer plans run them (a side with
 * no piece here: on the pair's last piece so far). */
static void layer_mem(group *g, int32_t fi, int32_t nf, int32_t bi, int32_t nb,
                      int has_f, int has_b)
{
    for (int32_t j = 0; j < g->e; j++) {
        prog_lane *lane = &g->st->ps->lanes[g->lane[j]];
        int32_t f = -1, b = -1, last = -1;
        for (int32_t k = g->first[j]; k < lane->n; k++) {
            const prog_op *op = &lane->ops[k];
            if (op->type != PROG_COMPUTE)
                continue;
            last = k;
            if (op->kind == PROG_F && f < 0)
                f = k;
            if (op->kind == PROG_B)
                b = k;
        }
        while (last < 0 && g->first[j] > 0 &&
               lane->ops[g->first[j] - 1].type != PROG_COMPUTE)
            g->first[j]--; /* nothing here: the pair's compute before */
        if (last < 0)
            last = g->first[j] - 1;
        if (has_f && last >= 0)
            lane->ops[f >= 0 ? f : last].mem += g->old[j][fi].mem / nf;
        if (has_b && last >= 0)
            lane->ops[b >= 0 ? b : last].mem += g->old[j][bi].mem / nb;
    }
}

/* A combined 1F1B pair (combined_pair) at ops i, i + 1: the forward's
 * layers in order beside the backward's in reverse, one layer pair at a
 * time (Megatron's TransformerModelChunkSchedulePlan.run pairs forward
 * layer k with the backward's k-th from the end). */
static int combined_step(group *g, int32_t i, ps_err *err)
{
    const par_step *st = g->st;
    int32_t fi = g->old[0][i].kind == PROG_F ? i : i + 1, bi = 2 * i + 1 - fi;
    int32_t fs = g->old[0][fi].stage, bs = g->old[0][bi].stage;
    int32_t nf = st->count[fs], nb = st->count[bs];
    for (int32_t k = 0; k < (nf > nb ? nf : nb); k++) {
        side f = side_of(g, fi, k < nf ? st->first[fs] + k : -1, 0);
        side b = side_of(g, bi, k < nb ? st->first[bs] + nb - 1 - k : -1, 1);
        for (int32_t j = 0; j < g->e; j++)
            g->first[j] = st->ps->lanes[g->lane[j]].n;
        if (layer_pair(g, &f, &b, err))
            return PS_ERR;
        layer_mem(g, fi, nf, bi, nb, k < nf, k < nb);
    }
    return PS_OK;
}

/* Rewrites the group's lanes, whose old ops are g->old (n each). */
static int rewrite(group *g, int32_t n, ps_err *err)
{
    const par_step *st = g->st;
    for (int32_t i = 0; i < n; i++) {
        if (!same_op(g, i))
            return ps_errf(err,
                           "expert-parallel group of rank %d: its ranks' "
                           "programs differ at op %d (a custom schedule "
                           "must give every replica the same order)",
                           (int)st->ps->lanes[g->lane[0]].rank, (int)i);
        const prog_op *op = &g->old[0][i];
        int pair = op->type == PROG_COMPUTE && op->kind == PROG_FB_F &&
                   i + 1 < n && g->old[0][i + 1].kind == PROG_FB_B &&
                   g->old[0][i + 1].type == PROG_COMPUTE &&
                   (has_moe(st, op) || has_moe(st, &g->old[0][i + 1]));
        int rc;
        if (!pair && combined_pair(g, i, n)) {
            rc = combined_step(g, i, err);
            i++;
        } else if (pair) {
            rc = overlap_pair(g, i, err);
            i++;
        } else if (has_moe(st, op) &&
                   (op->kind == PROG_F || op->kind == PROG_B ||
                    op->kind == PROG_FB_F || op->kind == PROG_FB_B)) {
            rc = split_op(g, i, err);
        } else {
            rc = PS_OK;
            for (int32_t j = 0; j < g->e && rc == PS_OK; j++)
                rc = push(st->ps, g->lane[j], g->old[j][i], err);
        }
        if (rc)
            return PS_ERR;
    }
    return PS_OK;
}

/* The group's lanes detached from their ops (kept in g->old; owned[j]
 * when the lane's own block, to free after) and rewritten. */
static int lower_group(group *g, uint8_t *owned, ps_err *err)
{
    prog_set *ps = g->st->ps;
    int32_t n = ps->lanes[g->lane[0]].n;
    for (int32_t j = 0; j < g->e; j++) {
        prog_lane *lane = &ps->lanes[g->lane[j]];
        if (lane->n != n)
            return ps_errf(err,
                           "expert-parallel group of rank %d: its ranks' "
                           "programs differ in length (%d and %d ops)",
                           (int)ps->lanes[g->lane[0]].rank, (int)n,
                           (int)lane->n);
    }
    for (int32_t j = 0; j < g->e; j++) {
        prog_lane *lane = &ps->lanes[g->lane[j]];
        g->old[j] = lane->ops;
        owned[j] = !lane->in_arena;
        lane->ops = NULL;
        lane->n = lane->cap = 0;
        lane->in_arena = 0;
    }
    int rc = rewrite(g, n, err);
    for (int32_t j = 0; j < g->e; j++)
        if (owned[j])
            limit_free(g->old[j]);
    return rc;
}

/* The stash's lanes, one per compute lane (same index, same rank). */
static int reset_state(par_step *st, int32_t nsim, ps_err *err)
{
    par_ep_state *s = st->ep.state;
    if (!s->stash && !(s->stash = prog_new(st->ps->nranks)))
        return ps_errf(err, "out of memory");
    prog_reset(s->stash, st->ps->nranks);
    if (nsim > s->cap) {
        int32_t *c = realloc(s->comm, (size_t)nsim * sizeof *c);
        if (!c)
            return ps_errf(err, "out of memory");
        s->comm = c;
        s->cap = nsim;
    }
    for (int32_t k = 0; k < nsim; k++) {
        s->comm[k] = -1;
        if (prog_add_lane(s->stash, st->ps->lanes[k].rank) < 0)
            return ps_errf(err, "out of memory");
    }
    return PS_OK;
}

/* The compute lane of every cluster rank simulated (-1: not) into at. */
static void lanes_of_ranks(const par_step *st, int32_t *at, int32_t nranks)
{
    for (int32_t c = 0; c < nranks; c++)
        at[c] = -1;
    for (int32_t k = 0; k < st->sim->n * st->sim->p; k++)
        at[st->sim->rank_of[k]] = k;
}

/* The configurations Megatron refuses overlap_moe_expert_parallel_comm
 * with (transformer_config.py __post_init__, d98e8a64dd): no expert
 * parallelism, a pipeline without virtual stages, full recompute; the
 * dispatcher is checked where it is chosen (lua/pipesim/expert.lua). */
static int overlap_refused(const par_step *st, ps_err *err)
{
    if (!st->ep.overlap)
        return PS_OK;
    if (!ep_active(st))
        return ps_errf(err, "ep_overlap needs expert parallelism: ep > 1 and "
                            "MoE layers (Megatron: \"overlap_moe_expert_"
                            "parallel_comm is only supported with expert "
                            "model parallelism\")");
    const sched_spec *s = &st->sched;
    if (!(s->kind == SCHED_INTERLEAVED || (s->kind == SCHED_1F1B && s->p == 1)))
        return ps_errf(err,
                       "ep_overlap runs Megatron's combined 1F1B: it needs "
                       "schedule 'interleaved', or '1f1b' on one stage, got "
                       "'%s' on %d (Megatron: \"virtual_pipeline_model_"
                       "parallel_size must be specified when pipeline_model_"
                       "parallel_size > 1\")",
                       sched_name(s->kind), (int)s->p);
    if (s->checkpoint)
        return ps_errf(err, "ep_overlap with full recompute (checkpoint) is "
                            "refused, as Megatron does (\"disable full "
                            "recomputation when enabling overlap_moe_expert_"
                            "parallel_comm\")");
    return PS_OK;
}

static int ep_lower(par_step *st, ps_err *err)
{
    int32_t nsim = st->sim->n * st->sim->p, nranks = net_ranks(st->nw);
    if ((ep_active(st) || par_ep_sync_applies(st)) &&
        reset_state(st, nsim, err))
        return PS_ERR;
    if (overlap_refused(st, err))
        return PS_ERR;
    if (!ep_active(st))
        return PS_OK;
    const par_layout *L = st->layout;
    unsigned mask = PAR_BIT(PAR_EP) | PAR_EXPERT;
    int32_t e = par_group_size(L, mask);
    if (st->ep.comm_share < 0 || st->ep.comm_share >= 1)
        return ps_errf(err, "ep_comm_share must be in [0, 1), got %g",
                       st->ep.comm_share);
    int32_t nl = model_layers(st);
    int32_t *at = malloc((size_t)nranks * sizeof *at);
    int32_t *ranks = malloc((size_t)e * 5 * sizeof *ranks);
    double *est = malloc(((size_t)nl * 4 + (size_t)e * 2) * sizeof *est);
    prog_op **old = malloc((size_t)e * sizeof *old);
    uint8_t *owned = malloc((size_t)e);
    int rc = at && ranks && est && old && owned ? PS_OK
                                                : ps_errf(err, "out of memory");
    if (rc == PS_OK)
        lanes_of_ranks(st, at, nranks);
    int32_t *lane = ranks + e, *first = ranks + 2 * e;
    for (int32_t gi = 0; rc == PS_OK && gi < par_group_count(L, mask); gi++) {
        par_group(L, mask, gi, ranks);
        rc = par_ep_group_lanes(at, ranks, e, lane, "expert-parallel", gi, err);
        if (rc <= 0)
            continue; /* not simulated (rc 0), or the error (rc < 0) */
        for (int32_t k = 0; k < 4 * nl; k++)
            est[k] = -1; /* each group's ranks: their own estimates */
        group g = {st,           e,   lane,         old,
                   first,        est, est + 4 * nl, ranks + 3 * e,
                   ranks + 4 * e};
        rc = lower_group(&g, owned, err);
    }
    free(at);
    free(est);
    free(ranks);
    free(old);
    free(owned);
    return rc;
}

/* After dp: the stash's lanes become the step's all-to-all lanes, and
 * the expert gradients' sync follows on them. */
static int ep_comm_lower(par_step *st, ps_err *err)
{
    if (!ep_active(st) && !par_ep_sync_applies(st))
        return PS_OK;
    par_ep_state *s = st->ep.state;
    for (int32_t k = 0; k < s->stash->nlanes; k++) {
        const prog_lane *from = &s->stash->lanes[k];
        if (from->n == 0)
            continue;
        int32_t l = prog_add_lane(st->ps, from->rank);
        if (l < 0 || prog_grow(st->ps, l, from->n))
            return ps_errf(err, "out of memory");
        prog_lane *to = &st->ps->lanes[l];
        memcpy(to->ops, from->ops, (size_t)from->n * sizeof *to->ops);
        to->n = from->n;
        s->comm[k] = l;
    }
    int32_t nranks = net_ranks(st->nw);
    int32_t *at = malloc((size_t)nranks * sizeof *at);
    if (!at)
        return ps_errf(err, "out of memory");
    lanes_of_ranks(st, at, nranks);
    int rc = par_ep_sync_lower(st, at, err);
    free(at);
    return rc;
}

/* Each compute lane's wait on its all-to-alls: a batch in place from the
 * lane's previous op's end to the batch's last completion, and an
 * overlapped pair's final wait. */
static void ep_exposed(const par_step *st, double *exposed)
{
    (void)exposed; /* the gradient sync's figure; ours is st->ep.exposed */
    int32_t n = st->sim->n * st->sim->p;
    /* without all-to-alls the step may have no programs to read (the
     * figures stay 0, pipe.c) */
    if (!st->ep.exposed || !st->ep.exposed_pairs || !ep_active(st) ||
        st->ps->nlanes < n)
        return;
    for (int32_t k = 0; k < n; k++) {
        const prog_lane *lane = &st->ps->lanes[k];
        double x = 0, pairs = 0;
        for (int32_t i = 0; i < lane->n; i++) {
            const prog_op *op = &lane->ops[i];
            if (op->type == PROG_WAIT && op->tag == PAR_EP_TAG) {
                pairs += op->t_end - op->t_start;
                continue;
            }
            if ((op->type != PROG_SEND && op->type != PROG_RECV) ||
                op->tag != PAR_EP_TAG)
                continue;
            double from = i > 0 ? lane->ops[i - 1].t_end : 0, end = from;
            for (; i < lane->n && lane->ops[i].tag == PAR_EP_TAG &&
                   (lane->ops[i].type == PROG_SEND ||
                    lane->ops[i].type == PROG_RECV);
                 i++)
                end = fmax(end, lane->ops[i].t_end);
            i--;
            x += end - from;
        }
        st->ep.exposed[k] = x + pairs;
        st->ep.exposed_pairs[k] = pairs;
    }
}

const par_pass par_ep_pass = {
    .name = "ep",
    .arrays = ep_arrays,
    .lower = ep_lower,
    .exposed = ep_exposed,
};

const par_pass par_ep_comm_pass = {
    .name = "ep_comm",
    .arrays = ep_arrays,
    .lower = ep_comm_lower,
    .memory = par_ep_sync_memory,
    .exposed = par_ep_sync_exposed,
};
