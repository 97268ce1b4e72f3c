/* The ep_sync pass (par/ep.h): the expert parameters' gradient sync over
 * the expert data-parallel group, a collective of its own beside the dp
 * pass's dense one over dp x cp, as Megatron-Core reduces expert
 * gradients over the expert data-parallel group
 * (megatron/core/distributed/distributed_data_parallel.py: the expert
 * parameters' buffers take parallel_state's
 * get_expert_data_parallel_group; core_v0.13.0 and later). It starts when
 * a rank's last backward ends and the optimizer step waits for it; its
 * static memory keeps the experts' optimizer state divided by the expert
 * data-parallel group under the distributed optimizer. Runs after dp: it
 * puts its wait before dp's, so dp's exposed figure is untouched. O(ops +
 * ranks). */
#include "par/ep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"
#include "par/dp_impl.h"

/* The tag of the sync's wait (ep_sync_exposed). */
#define EP_SYNC_TAG (-8)

int par_ep_group_lanes(const int32_t *at, const int32_t *ranks, int32_t n,
                       int32_t *lane, const char *what, int32_t gi, ps_err *err)
{
    int32_t simulated = 0;
    for (int32_t j = 0; j < n; j++)
        simulated += (lane[j] = at[ranks[j]]) >= 0;
    if (simulated == 0)
        return 0; /* a folded TP rank's group: its twin runs */
    if (simulated < n)
        return ps_errf(err,
                       "%s group %d mixes ranks pipesim simulates with "
                       "tensor-parallel ranks it folds into their group's "
                       "rank 0 (etp unlike tp in this layout): not modelled; "
                       "give etp = tp",
                       what, (int)gi);
    return 1;
}

/* Expert parameters of model stage s (per rank). */
static double stage_experts(const par_step *st, int32_t s)
{
    double x = 0;
    for (int32_t i = st->first[s]; i < st->first[s] + st->count[s]; i++)
        x += st->ep.layers[i].expert_params;
    return x;
}

/* Does the step sync expert gradients apart: the expert data-parallel
 * group differs from dp x cp (ep > 1 or etp unlike tp) and some layer
 * has expert parameters? */
int par_ep_sync_applies(const par_step *st)
{
    const par_layout *L = st->layout;
    if (!st->ep.layers || (L->s.ep < 2 && L->s.etp == L->s.tp))
        return 0;
    for (int32_t s = 0; s < st->nstages; s++)
        if (stage_experts(st, s) > 0)
            return 1;
    return 0;
}

/* The expert parameters on pipeline rank r: its chunks' stages, and with
 * DualPipe the second copy of stage p - 1 - r. */
static double rank_experts(const par_step *st, int32_t r)
{
    int32_t p = st->sim->p;
    double x = 0;
    for (int32_t s = 0; s < st->nstages; s++) {
        if (sched_place_rank(st->sched.placement, st->sched.place, p, s) == r)
            x += stage_experts(st, s);
        if (st->sched.kind == SCHED_DUALPIPE && p - 1 - s == r)
            x += stage_experts(st, s);
    }
    return x;
}

static int is_grad(const prog_op *op)
{
    return op->type == PROG_COMPUTE &&
           (op->kind == PROG_B || op->kind == PROG_W || op->kind == PROG_FB_B);
}

/* Compute lane k rewritten: SIGNAL(ready) after its last gradient op,
 * WAIT(done) before dp's wait and the optimizer step (or at the end). */
static int rewrite(prog_set *ps, int32_t k, int32_t ready, int32_t done)
{
    prog_lane *lane = &ps->lanes[k];
    int32_t last = -1, at = lane->n;
    for (int32_t i = 0; i < lane->n; i++) {
        if (is_grad(&lane->ops[i]))
            last = i;
        if (lane->ops[i].type == PROG_COMPUTE && lane->ops[i].kind == PROG_OPT)
            at = i;
    }
    if (at < lane->n && at > 0 && lane->ops[at - 1].type == PROG_WAIT)
        at--; /* dp's WAIT(synced) */
    if (last >= at)
        last = at - 1;
    prog_op *ops = limit_malloc(((size_t)lane->n + 2) * sizeof *ops);
    if (!ops)
        return -1;
    prog_op w = prog_signal(PROG_WAIT, done);
    w.tag = EP_SYNC_TAG;
    int32_t n = 0;
    if (last < 0)
        ops[n++] = prog_signal(PROG_SIGNAL, ready);
    for (int32_t i = 0; i < lane->n; i++) {
        if (i == at)
            ops[n++] = w;
        ops[n++] = lane->ops[i];
        if (i == last)
            ops[n++] = prog_signal(PROG_SIGNAL, ready);
    }
    if (at == lane->n)
        ops[n++] = w;
    if (!lane->in_arena)
        limit_free(lane->ops);
    lane->ops = ops;
    lane->in_arena = 0;
    lane->n = lane->cap = n;
    return 0;
}

/* One expert data-parallel group's all-reduce on its communication lanes
 * (the ranks' EP lanes, made where a rank has none). */
static int group_sync(par_step *st, coll_forks *forks, const int32_t *ranks,
                      const int32_t *lane, int32_t *comm, int32_t n,
                      double bytes, ps_err *err)
{
    int32_t rpn = st->gpus_per_node > 1
                      ? coll_ranks_per_node(st->gpus_per_node, ranks, n)
                      : 0;
    int32_t sig = st->ps->nsignals;
    st->ps->nsignals += 2 * n;
    for (int32_t j = 0; j < n; j++) {
        par_ep_state *s = st->ep.state;
        if (s->comm[lane[j]] < 0 &&
            (s->comm[lane[j]] = prog_add_lane(st->ps, ranks[j])) < 0)
            return ps_errf(err, "out of memory");
        comm[j] = s->comm[lane[j]];
        prog_op w = prog_signal(PROG_WAIT, sig + 2 * j);
        if (rewrite(st->ps, lane[j], sig + 2 * j, sig + 2 * j + 1) ||
            prog_push(st->ps, comm[j], &w))
            return ps_errf(err, "out of memory");
    }
    /* the dense sync's collective (par/dp_impl.h), on the expert group */
    if (par_dp_coll(st, forks, comm, ranks, n, rpn, COLL_ALLREDUCE, bytes,
                    EP_SYNC_TAG, err))
        return PS_ERR;
    for (int32_t j = 0; j < n; j++) {
        prog_op sg = prog_signal(PROG_SIGNAL, sig + 2 * j + 1);
        if (prog_push(st->ps, comm[j], &sg))
            return ps_errf(err, "out of memory");
    }
    return PS_OK;
}

int par_ep_sync_lower(par_step *st, const int32_t *at, ps_err *err)
{
    if (!par_ep_sync_applies(st))
        return PS_OK;
    const par_layout *L = st->layout;
    unsigned mask = PAR_BIT(PAR_DP) | PAR_EXPERT;
    int32_t n = par_group_size(L, mask);
    if (n < 2)
        return PS_OK;
    int32_t *ranks = malloc((size_t)n * 3 * sizeof *ranks);
    if (!ranks)
        return ps_errf(err, "out of memory");
    int32_t *lane = ranks + n, *comm = ranks + 2 * n;
    coll_forks forks = {0};
    int rc = PS_OK;
    for (int32_t g = 0; rc == PS_OK && g < par_group_count(L, mask); g++) {
        par_group(L, mask, g, ranks);
        rc = par_ep_group_lanes(at, ranks, n, lane, "expert data-parallel", g,
                                err);
        if (rc <= 0)
            continue; /* not simulated (rc 0), or the error (rc < 0) */
        double bytes = rank_experts(st, lane[0] % st->sim->p) * st->grad_bytes;
        rc = bytes > 0
                 ? group_sync(st, &forks, ranks, lane, comm, n, bytes, err)
                 : PS_OK;
    }
    coll_forks_free(&forks);
    free(ranks);
    return rc;
}

void par_ep_sync_memory(const par_step *st, double *rank_static)
{
    if (!par_ep_sync_applies(st))
        return;
    const par_layout *L = st->layout;
    const par_sim *sim = st->sim;
    int zero = L->s.shard == PAR_SHARD_OPTIMIZER && L->edp > 1;
    double per_param = st->weight_bytes + st->grad_bytes +
                       st->optimizer_bytes / (zero ? L->edp : 1);
    for (int32_t k = 0; k < sim->n * sim->p; k++)
        rank_static[sim->rank_of[k]] +=
            rank_experts(st, k % sim->p) * per_param;
}

void par_ep_sync_exposed(const par_step *st, double *exposed)
{
    /* no programs (a step that did not build them): nothing waited */
    if (!par_ep_sync_applies(st) || st->ps->nlanes < st->sim->n * st->sim->p)
        return;
    for (int32_t k = 0; k < st->sim->n * st->sim->p; k++) {
        const prog_lane *lane = &st->ps->lanes[k];
        for (int32_t i = 0; i < lane->n; i++)
            if (lane->ops[i].type == PROG_WAIT &&
                lane->ops[i].tag == EP_SYNC_TAG) {
                if (isnan(exposed[k]))
                    exposed[k] = 0;
                exposed[k] += lane->ops[i].t_end - lane->ops[i].t_start;
            }
    }
}
