/* ZeRO-2 and ZeRO-3 / FSDP in the dp pass (par/dp.h): the collectives a
 * rank's lane needs, in its order, their lowering on a group's lanes with
 * hybrid sharding's subgroups, and the static memory of a sharded rank.
 * The compute lanes' side is par/fsdp_lane.c. O(ops) per step.
 *
 * What the implementations run, and pipesim with them:
 *   - ZeRO-2 reduce-scatters the gradients bucket by bucket during every
 *     backward (DeepSpeed, deepspeedai/DeepSpeed commit 7dee2e0,
 *     runtime/zero/stage_1_and_2.py:
 *     reduce_independent_p_g_buckets_and_remove_grads fills the IPG bucket
 *     of reduce_bucket_size elements and reduce_ipg_grads reduces it on
 *     the reduction stream with overlap_comm; FSDP SHARD_GRAD_OP the same
 *     per unit), and all-gathers the updated parameters after the
 *     optimizer (stage_1_and_2.py step, runtime/utils.py
 *     all_gather_dp_groups by allgather_bucket_size), as ZeRO-1 does.
 *   - ZeRO-3 / FSDP FULL_SHARD all-gather each unit's parameters before
 *     its forward and again before its backward, and reduce-scatter its
 *     gradients after its backward (PyTorch, pytorch/pytorch commit
 *     002a76f, torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py:
 *     pre_forward
 *     unshard, post_forward reshard, pre_backward unshard, post_backward
 *     foreach_reduce); the all-gathers run on their own stream
 *     (FSDPCommContext.all_gather_stream: "allows overlapping next
 *     all-gather with current forward compute") and the reduce-scatters
 *     on another (reduce_scatter_stream), here two lanes; HSDP's
 *     all-reduce, on a third stream there, follows each reduce-scatter on
 *     the reduce lane here.
 *     The next unit's all-gather is issued while the current unit computes
 *     and no further: FSDP1's limit_all_gathers (two in flight), FSDP2's
 *     prefetch of one (set_modules_to_forward_prefetch,
 *     backward_prefetch BACKWARD_PRE), DeepSpeed's stage3 prefetch
 *     (partitioned_param_coordinator.py fetch_sub_module with
 *     prefetch_bucket_size). So gather g waits until unit g - 1 has started.
 *     Per microbatch and step this is 3 (N - 1) / N of the model's bytes
 *     per rank, 1.5x DDP's all-reduce (ZeRO paper, Rajbhandari et al.
 *     2020, section 7.2.2).
 * Units are the model's layers (FSDP2's fully_shard per transformer
 * block, Megatron-FSDP's TransformerLayer units, DeepSpeed's submodules
 * gathered by prefetch bucket). */
#include "par/dp_impl.h"

#include <math.h>
#include <stdlib.h>

#include "coll/coll.h"

int par_dp_coll(par_step *st, coll_forks *forks, const int32_t *lanes,
                const int32_t *ranks, int32_t n, int32_t rpn, int op,
                double bytes, int32_t tag, ps_err *err)
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
    spec.protocol = par_protocol(st, &spec, st->dp.protocol);
    return par_append_coll(st, forks, &spec, lanes, tag, err);
}

/* The collective on members j = a * stride + x * step (x < n) of the
 * group: one shard (stride width, step 1) or one replica set (step
 * width). */
static int sub_collective(const dp_config *c, par_step *st, coll_forks *forks,
                          const dp_group *g, const int32_t *lanes, int op,
                          double bytes, int32_t first, int32_t step, int32_t n,
                          int32_t tag, ps_err *err)
{
    if (n < 2)
        return PS_OK; /* a group of one has nothing to move */
    for (int32_t x = 0; x < n; x++) {
        g->sub_lanes[x] = lanes[first + x * step];
        g->sub_ranks[x] = g->ranks[first + x * step];
    }
    int32_t rpn = n == g->d ? c->ranks_per_node
                  : st->gpus_per_node > 1
                      ? coll_ranks_per_node(st->gpus_per_node, g->sub_ranks, n)
                      : 0;
    return par_dp_coll(st, forks, g->sub_lanes, g->sub_ranks, n, rpn, op, bytes,
                       tag, err);
}

int par_dp_collective(const dp_config *c, par_step *st, coll_forks *forks,
                      const dp_group *g, const int32_t *lanes, int op,
                      double bytes, int32_t width, int32_t tag, ps_err *err)
{
    int32_t d = g->d;
    if (width < 1 || width > d || d % width)
        width = d;
    int rc = PS_OK;
    for (int32_t a = 0; a < d / width && rc == PS_OK; a++)
        rc = sub_collective(c, st, forks, g, lanes, op, bytes, a * width, 1,
                            width, tag, err);
    /* hybrid sharding: each shard's reduced 1/width all-reduced across
     * the replicas (Megatron's inter_distributed_optimizer_instance_group,
     * FSDP HYBRID_SHARD's replicate dimension) */
    for (int32_t x = 0;
         op == COLL_REDUCE_SCATTER && width < d && x < width && rc == PS_OK;
         x++)
        rc = sub_collective(c, st, forks, g, lanes, COLL_ALLREDUCE,
                            bytes / width, x, width, d / width, tag, err);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The events of a lane                                                */

static int is_fwd(const prog_op *op, int32_t v)
{
    return op->type == PROG_COMPUTE && op->kind == PROG_F && op->chunk >= 0 &&
           op->chunk < v;
}

static int is_bwd(const prog_op *op, int32_t v)
{
    return op->type == PROG_COMPUTE && op->kind == PROG_B && op->chunk >= 0 &&
           op->chunk < v;
}

void par_fsdp_events_free(fsdp_events *ev)
{
    free(ev->red);
    free(ev->gat);
    free(ev->bwd);
    *ev = (fsdp_events){0};
}

/* Appends chunk ch's buckets to ev: its reduce-scatters (plan order, the
 * backward's) when red, else its all-gathers (before a backward: the
 * backward's order; before a forward: the reverse). With fill 0 only
 * counts. */
static void add_chunk(const plan *pl, int32_t ch, int red, int bwd,
                      fsdp_events *ev, int fill)
{
    for (int32_t q = 0; q < pl->n; q++) {
        int32_t k = bwd || red ? q : pl->n - 1 - q;
        if (pl->b[k].chunk != ch)
            continue;
        if (red) {
            if (fill)
                ev->red[ev->nred] = k;
            ev->nred++;
        } else {
            if (fill) {
                ev->gat[ev->ngat] = k;
                ev->bwd[ev->ngat] = (uint8_t)bwd;
            }
            ev->ngat++;
        }
    }
}

/* One walk over the lane: counts (fill 0) or writes (fill 1). */
static int walk(const dp_config *c, const prog_lane *lane, const plan *pl,
                fsdp_events *ev, int fill)
{
    int gathers = c->stage == PAR_SHARD_PARAMS;
    ev->nred = ev->ngat = 0;
    for (int32_t i = 0; i < lane->n; i++) {
        const prog_op *op = &lane->ops[i];
        if (op->type == PROG_COMPUTE &&
            (op->kind == PROG_W || op->kind == PROG_FB_F ||
             op->kind == PROG_FB_B))
            return -3;
        if (gathers && is_fwd(op, c->v))
            add_chunk(pl, op->chunk, 0, 0, ev, fill);
        if (is_bwd(op, c->v)) {
            if (gathers && c->reshard != 1)
                add_chunk(pl, op->chunk, 0, 1, ev, fill);
            add_chunk(pl, op->chunk, 1, 1, ev, fill);
        }
    }
    return 0;
}

int par_fsdp_events(const dp_config *c, const prog_lane *lane, const plan *pl,
                    fsdp_events *ev)
{
    *ev = (fsdp_events){0};
    int rc = walk(c, lane, pl, ev, 0);
    if (rc)
        return rc;
    ev->red = malloc(((size_t)ev->nred + 1) * sizeof *ev->red);
    ev->gat = malloc(((size_t)ev->ngat + 1) * sizeof *ev->gat);
    ev->bwd = malloc((size_t)ev->ngat + 1);
    if (!ev->red || !ev->gat || !ev->bwd)
        return -1;
    return walk(c, lane, pl, ev, 1);
}

/* ------------------------------------------------------------------ */
/* The group's collectives                                             */

static int push(prog_set *ps, int32_t lane, prog_op op, ps_err *err)
{
    return prog_push(ps, lane, &op) ? ps_errf(err, "out of memory") : PS_OK;
}

/* Every member's lane (of lanes) waits for (wait) or raises signal base
 * + off. */
static int each(par_step *st, const dp_group *g, const int32_t *lanes,
                enum prog_type type, int32_t off, ps_err *err)
{
    int rc = PS_OK;
    for (int32_t j = 0; j < g->d && rc == PS_OK; j++)
        rc = push(st->ps, lanes[j], prog_signal(type, g->base[j] + off), err);
    return rc;
}

int par_fsdp_lower_group(const dp_config *c, par_step *st, coll_forks *forks,
                         const dp_group *g, const plan *pl,
                         const fsdp_events *ev, ps_err *err)
{
    int rc = PS_OK;
    int32_t gathered = ev->nred + 2, started = gathered + ev->ngat;
    for (int32_t e = 0; e < ev->nred && rc == PS_OK; e++) {
        rc = each(st, g, g->comm, PROG_WAIT, e, err);
        if (rc == PS_OK)
            rc = par_dp_collective(c, st, forks, g, g->comm,
                                   COLL_REDUCE_SCATTER, pl->b[ev->red[e]].bytes,
                                   c->shard, ev->red[e], err);
    }
    for (int32_t k = 0; k < ev->ngat && rc == PS_OK; k++) {
        if (k > 0)
            rc = each(st, g, g->gather, PROG_WAIT, started + k - 1, err);
        /* before a backward the unit is gathered from the group it was
         * resharded to after its forward */
        int32_t width = ev->bwd[k] && c->reshard > 1 ? c->reshard : c->shard;
        if (rc == PS_OK)
            rc = par_dp_collective(c, st, forks, g, g->gather, COLL_ALLGATHER,
                                   pl->b[ev->gat[k]].params * c->weight_bytes,
                                   width, ev->gat[k], err);
        if (rc == PS_OK)
            rc = each(st, g, g->gather, PROG_SIGNAL, gathered + k, err);
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* Memory                                                              */

/* Bytes per parameter held by a rank of a group of `shard` (ZeRO paper,
 * Rajbhandari et al. 2020, section 5.1 and Figure 1, with weight 2, grad
 * 2 and K = 12 optimizer bytes for mixed-precision Adam): stage 0 2 + 2 +
 * K, stage 1 2 + 2 + K / N, stage 2 2 + (2 + K) / N, stage 3 (2 + 2 + K) /
 * N. */
double par_fsdp_per_param(const par_step *st, int stage, int32_t shard)
{
    double n = shard > 1 ? shard : 1, w = st->weight_bytes, g = st->grad_bytes,
           o = st->optimizer_bytes;
    switch (stage) {
    case PAR_SHARD_OPTIMIZER: return w + g + o / n;
    case PAR_SHARD_GRADS: return w + (g + o) / n;
    case PAR_SHARD_PARAMS: return (w + g + o) / n;
    default: return w + g + o;
    }
}

/* Pipeline rank r's largest layer (parameters) and its parameters in all,
 * over the model stages it holds. */
static void rank_layers(const par_step *st, int32_t r, double *unit,
                        double *params)
{
    int32_t p = st->sim->p;
    *unit = *params = 0;
    for (int32_t s = 0; s < st->nstages; s++) {
        if (sched_place_rank(st->sched.placement, st->sched.place, p, s) != r)
            continue;
        *params += st->stage_params[s];
        for (int32_t l = st->first[s]; l < st->first[s] + st->count[s]; l++)
            *unit = fmax(*unit, st->layer_params[l]);
    }
}

/* What the implementations hold beyond the formulas, on pipeline rank r:
 *   - stage 2: the reduction's bucket buffers, two of reduce_bucket_size
 *     with overlap_comm (DeepSpeed commit 7dee2e0 stage_1_and_2.py backward:
 * ipg_buffer, a second one when overlap_comm), at most the rank's gradients;
 *   - stage 3: the unsharded parameters of the unit computing and of the
 *     one prefetched, and the unsharded gradients of the unit computing
 *     and of the one being reduce-scattered (PyTorch commit 002a76f
 *     _fsdp_param_group.py: all-gather outputs alive until reshard,
 *     foreach_reduce's reduce_scatter_input until the reduce-scatter
 *     ends); units resharded after the forward to fewer ranks than the
 *     shard group (reshard_after_forward an int, or false: 1) hold their
 *     parameters at 1/reshard until their backward, counted here for
 *     every layer of the rank. */
double par_fsdp_buffers(const par_step *st, int stage, int32_t shard,
                        int32_t reshard, int32_t r)
{
    double unit, params;
    if (shard < 2)
        return 0;
    rank_layers(st, r, &unit, &params);
    if (stage == PAR_SHARD_GRADS)
        return fmin(2 * st->dp.bucket_bytes, params * st->grad_bytes);
    if (stage != PAR_SHARD_PARAMS)
        return 0;
    double held = 2 * unit * (st->weight_bytes + st->grad_bytes);
    if (reshard > 0 && reshard < shard)
        held += params * st->weight_bytes * (1.0 / reshard - 1.0 / shard);
    return held;
}
