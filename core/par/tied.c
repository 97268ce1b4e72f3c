/* The tied pass (par/tied.h). */
#include "par/tied.h"

/* The model stage holding layer i. */
static int32_t stage_of(const par_step *st, int32_t i)
{
    int32_t s = 0;
    while (s < st->nstages - 1 && i >= st->first[s] + st->count[s])
        s++;
    return s;
}

static int tied_plan(par_step *st, ps_err *err)
{
    int32_t p = st->sim->p, last = st->nstages - 1;
    int32_t nlayers = st->first[last] + st->count[last];
    int32_t r0 = sched_place_rank(st->sched.placement, st->sched.place, p, 0);
    for (int32_t i = 0; st->layer_shared && i < nlayers; i++) {
        if (!(st->layer_shared[i] > 0))
            continue;
        int32_t r1 = sched_place_rank(st->sched.placement, st->sched.place, p,
                                      stage_of(st, i));
        if (r1 == r0)
            continue; /* both copies on one rank: summed in place */
        if (st->nfinalize == PAR_MAX_FINALIZE)
            return ps_errf(err,
                           "layers[%d]: more than %d layers share parameters "
                           "with the first layer",
                           (int)i + 1, PAR_MAX_FINALIZE);
        st->finalize[st->nfinalize++] =
            (par_finalize){r0, r1, st->layer_shared[i] * st->grad_bytes};
    }
    return PS_OK;
}

const par_pass par_tied_pass = {
    .name = "tied",
    .plan = tied_plan,
};
