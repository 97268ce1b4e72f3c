/* The list of passes and its drivers (par/pass.h): the one file that
 * knows every pass, above them all (the passes call par/pass.c's helpers,
 * never this file). */
#include "par/pass.h"

#include <math.h>

#include "par/dp.h"
#include "par/ep.h"
#include "par/pp.h"
#include "par/tied.h"

/* In lowering order: the schedules make the compute lanes every other
 * pass edits; tied asks dp for its reduction before dp lowers; ep cuts
 * the compute ops at their all-to-alls before dp rewrites the lanes, and
 * adds its communication lanes after dp's (par/ep.h). */
const par_pass *const par_passes[] = {&par_pp_pass,      &par_tied_pass,
                                      &par_ep_pass,      &par_dp_pass,
                                      &par_ep_comm_pass, NULL};

int par_plan(par_step *st, ps_err *err)
{
    st->nfinalize = 0;
    for (const par_pass *const *p = par_passes; *p; p++)
        if ((*p)->plan && (*p)->plan(st, err))
            return PS_ERR;
    return PS_OK;
}

int par_arrays(const par_step *st)
{
    for (const par_pass *const *p = par_passes; *p; p++)
        if ((*p)->arrays && (*p)->arrays(st))
            return 1;
    return 0;
}

int par_lower(par_step *st, ps_err *err)
{
    for (const par_pass *const *p = par_passes; *p; p++)
        if ((*p)->lower && (*p)->lower(st, err))
            return PS_ERR;
    return PS_OK;
}

void par_memory(const par_step *st, double *rank_static)
{
    for (const par_pass *const *p = par_passes; *p; p++)
        if ((*p)->memory)
            (*p)->memory(st, rank_static);
}

void par_exposed(const par_step *st, double *exposed)
{
    int32_t n = st->sim->n * st->sim->p;
    for (int32_t k = 0; k < n; k++)
        exposed[k] = NAN;
    for (const par_pass *const *p = par_passes; *p; p++)
        if ((*p)->exposed)
            (*p)->exposed(st, exposed);
}
