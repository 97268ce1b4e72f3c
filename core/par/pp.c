/* The pp pass (par/pp.h). */
#include "par/pp.h"

#include <math.h>

static int pp_lower(par_step *st, ps_err *err)
{
    const par_sim *sim = st->sim;
    sched_spec spec = st->sched;
    for (int32_t i = 0; i < sim->n; i++) {
        /* each instance's pipeline is the same schedule on its own ranks,
         * timed on their devices */
        spec.stages = st->stages + (size_t)i * st->nstages;
        spec.rank_of = sim->rank_of + (size_t)i * sim->p;
        if (sched_lower(&spec, st->ps, err))
            return PS_ERR;
    }
    return PS_OK;
}

/* The largest working bytes (pipe_layer.work_bytes) of stage s's layers. */
static double stage_work(const par_step *st, int32_t s)
{
    double most = 0;
    for (int32_t l = st->first[s]; l < st->first[s] + st->count[s]; l++)
        if (st->layer_work[l] > most)
            most = st->layer_work[l];
    return most;
}

/* Each rank's working bytes: a layer's (context parallelism's K/V ring
 * buffers) exist only while it computes, and a rank computes one layer
 * at a time, so it needs the largest of its layers' (its stages', and
 * DualPipe's second copies on rank p - 1 - s), held over the whole step
 * as the static bytes are: the peak then counts them beside whatever
 * activations are held, as the layer computing needs them. */
static void pp_memory(const par_step *st, double *rank_static)
{
    const par_sim *sim = st->sim;
    int32_t p = sim->p;
    if (!st->layer_work)
        return;
    for (int32_t r = 0; r < p; r++) {
        double most = 0;
        for (int32_t s = 0; s < st->nstages; s++) {
            int32_t at =
                sched_place_rank(st->sched.placement, st->sched.place, p, s);
            int dual = st->sched.kind == SCHED_DUALPIPE && p - 1 - s == r;
            if (at == r || dual)
                most = fmax(most, stage_work(st, s));
        }
        for (int32_t i = 0; most > 0 && i < sim->n; i++)
            rank_static[sim->rank_of[i * p + r]] += most;
    }
}

const par_pass par_pp_pass = {
    .name = "pp",
    .lower = pp_lower,
    .memory = pp_memory,
};
