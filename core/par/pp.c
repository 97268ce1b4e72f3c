/* The pp pass (par/pp.h). */
#include "par/pp.h"

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

const par_pass par_pp_pass = {
    .name = "pp",
    .lower = pp_lower,
};
