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
 * WAIT(done) before dp's wait and the optimizer step (or at the end);
 * done < 0: the SIGNAL only (a folded twin's, par_ep_sync_lower). */
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
        if (i == at && done >= 0)
            ops[n++] = w;
        ops[n++] = lane->ops[i];
        if (i == last)
            ops[n++] = prog_signal(PROG_SIGNAL, ready);
    }
    if (at == lane->n && done >= 0)
        ops[n++] = w;
    if (!lane->in_arena)
        limit_free(lane->ops);
    lane->ops = ops;
    lane->in_arena = 0;
    lane->n = lane->cap = n;
    return 0;
}

/* One expert data-parallel group's all-reduce on its communication lanes
 * (the ranks' EP lanes, made where a rank has none). A folded member
 * (twin[j]: lane[j] is the compute lane of the simulated rank it is
 * folded into) gets a lane of its own on its cluster rank, which starts
 * when its twin's gradients are ready; the twin waits for its own. */
static int group_sync(par_step *st, coll_forks *forks, const int32_t *ranks,
                      const int32_t *lane, const char *twin, int32_t *comm,
                      int32_t n, double bytes, ps_err *err)
{
    int32_t rpn = st->gpus_per_node > 1
                      ? coll_ranks_per_node(st->gpus_per_node, ranks, n)
                      : 0;
    int32_t sig = st->ps->nsignals;
    st->ps->nsignals += 2 * n;
    for (int32_t j = 0; j < n; j++) {
        par_ep_state *s = st->ep.state;
        if (twin[j])
            comm[j] = prog_add_lane(st->ps, ranks[j]);
        else if (s->comm[lane[j]] < 0)
            comm[j] = s->comm[lane[j]] = prog_add_lane(st->ps, ranks[j]);
        else
            comm[j] = s->comm[lane[j]];
        if (comm[j] < 0)
            return ps_errf(err, "out of memory");
        prog_op w = prog_signal(PROG_WAIT, sig + 2 * j);
        if (rewrite(st->ps, lane[j], sig + 2 * j,
                    twin[j] ? -1 : sig + 2 * j + 1) ||
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

/* The compute lane each cluster rank is simulated on (nranks entries):
 * its own, or for a folded TP rank its twin's, the simulated rank whose
 * member it is (par/sim.h); -1 for ranks outside the step. */
static int32_t *twin_lanes(const par_step *st, const int32_t *at)
{
    const par_sim *sim = st->sim;
    int32_t nr = st->ps->nranks;
    int32_t *tl = malloc((size_t)nr * sizeof *tl);
    if (!tl)
        return NULL;
    for (int32_t r = 0; r < nr; r++)
        tl[r] = -1;
    for (int32_t k = 0; k < sim->n * sim->p; k++)
        for (int32_t q = 0; q < sim->per; q++) {
            int32_t m = sim->member[(size_t)k * sim->per + q];
            if (m >= 0 && m < nr)
                tl[m] = at[sim->rank_of[k]];
        }
    return tl;
}

/* Group g's compute lanes when only some of its ranks are simulated: an
 * expert data-parallel group that crosses the TP ranks pipesim folds
 * into their group's rank 0 (tp 2 with ep 1 and etp 1: the experts
 * replicated over the TP pair, as Megatron's expert rank generator
 * etp-ep-dp-pp makes them). Each folded member runs its twin's program,
 * so it takes part in the collective from its twin's lane (twin[j]).
 * Fails as par_ep_group_lanes does when a member has no twin. */
static int folded_lanes(const int32_t *tl, const int32_t *ranks, int32_t n,
                        int32_t *lane, char *twin, int32_t g, ps_err *err)
{
    for (int32_t j = 0; j < n; j++) {
        twin[j] = lane[j] < 0;
        if (twin[j] && (lane[j] = tl[ranks[j]]) < 0)
            return par_ep_group_lanes(tl, ranks, n, lane,
                                      "expert data-parallel", g, err);
    }
    return PS_OK;
}

int par_ep_sync_lower(par_step *st, const int32_t *at, ps_err *err)
{
    if (!par_ep_sync_applies(st))
        return PS_OK;
    const par_layout *L = st->layout;
    /* as ep > 1 (bind/run_opts.c): ZeRO-2/3 shard the experts over the
     * expert data-parallel group, which their passes do not know */
    if (L->s.shard >= PAR_SHARD_GRADS)
        return ps_errf(err,
                       "zero = %d with etp = %d unlike tp = %d is not "
                       "modelled (the experts' shards span the "
                       "expert-data-parallel group)",
                       L->s.shard, (int)L->s.etp, (int)L->s.tp);
    unsigned mask = PAR_BIT(PAR_DP) | PAR_EXPERT;
    int32_t n = par_group_size(L, mask);
    if (n < 2)
        return PS_OK;
    int32_t *ranks = malloc((size_t)n * 3 * sizeof *ranks);
    char *twin = calloc((size_t)n, 1);
    if (!ranks || !twin) {
        free(ranks);
        free(twin);
        return ps_errf(err, "out of memory");
    }
    int32_t *lane = ranks + n, *comm = ranks + 2 * n, *tl = NULL;
    coll_forks forks = {0};
    int rc = PS_OK;
    for (int32_t g = 0; rc == PS_OK && g < par_group_count(L, mask); g++) {
        par_group(L, mask, g, ranks);
        int32_t sim = 0;
        for (int32_t j = 0; j < n; j++)
            sim += (lane[j] = at[ranks[j]]) >= 0;
        if (sim == 0)
            continue; /* a folded TP rank's group: its twin runs */
        memset(twin, 0, (size_t)n);
        if (sim < n && !tl && !(tl = twin_lanes(st, at)))
            rc = ps_errf(err, "out of memory");
        else if (sim < n)
            rc = folded_lanes(tl, ranks, n, lane, twin, g, err);
        double bytes = rc == PS_OK ? rank_experts(st, lane[0] % st->sim->p) *
                                         st->grad_bytes
                                   : 0;
        if (bytes > 0)
            rc = group_sync(st, &forks, ranks, lane, twin, comm, n, bytes, err);
    }
    coll_forks_free(&forks);
    free(tl);
    free(twin);
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
