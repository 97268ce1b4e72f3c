/* The simulated ranks of a step (par/sim.h): instances, their cluster
 * ranks and the members each simulated rank stands for. O(world) per
 * build, arrays kept across builds. */
#include "par/sim.h"

#include <stdlib.h>
#include <string.h>

/* The dimensions an instance varies over, innermost first (PP is the
 * pipeline inside an instance, EP is 1 on the dense side). */
static const int inst_dims[3] = {PAR_TP, PAR_CP, PAR_DP};

static int grow(int32_t **a, int32_t *cap, int64_t n)
{
    if (n <= *cap)
        return 0;
    int32_t *b = realloc(*a, (size_t)n * sizeof *b);
    if (!b)
        return -1;
    *a = b;
    *cap = (int32_t)n;
    return 0;
}

int par_sim_build(par_sim *s, const par_layout *L, const int fold[PAR_NDIMS],
                  ps_err *err)
{
    int32_t size[PAR_NDIMS] = {L->s.tp, L->s.cp, 1, L->s.dp, L->s.pp};
    s->p = L->s.pp;
    s->n = 1;
    s->per = 1;
    for (int d = 0; d < PAR_NDIMS; d++) {
        s->fold[d] = d == PAR_EP || (d != PAR_PP && fold[d]);
        s->unfolded[d] = s->fold[d] ? 1 : size[d];
        if (d != PAR_PP)
            s->n *= s->unfolded[d];
        if (s->fold[d])
            s->per *= size[d];
    }
    int32_t nsim = s->n * s->p; /* <= world <= PAR_MAX_RANKS */
    if (grow(&s->rank_of, &s->cap_ranks, nsim) ||
        grow(&s->coord, &s->cap_coords, (int64_t)s->n * PAR_NDIMS) ||
        grow(&s->member, &s->cap_members, (int64_t)nsim * s->per)) {
        s->n = 0;
        return ps_errf(err, "out of memory");
    }
    const int32_t *stride = L->dense.stride;
    for (int32_t i = 0; i < s->n; i++) {
        int32_t *c = s->coord + (size_t)i * PAR_NDIMS, left = i, base = 0;
        memset(c, 0, PAR_NDIMS * sizeof *c);
        for (int k = 0; k < 3; k++) {
            int d = inst_dims[k];
            c[d] = left % s->unfolded[d];
            left /= s->unfolded[d];
            base += c[d] * stride[d];
        }
        for (int32_t r = 0; r < s->p; r++) {
            int32_t k = i * s->p + r, *m = s->member + (size_t)k * s->per;
            /* members: the folded dimensions' values, TP fastest, as
             * layout ranks (par_rank's sum of coordinate x stride) */
            for (int32_t q = 0; q < s->per; q++) {
                int32_t at = base + r * stride[PAR_PP], rest = q;
                for (int kk = 0; s->per > 1 && kk < 3; kk++) {
                    int d = inst_dims[kk];
                    if (!s->fold[d])
                        continue;
                    at += rest % size[d] * stride[d];
                    rest /= size[d];
                }
                m[q] = par_cluster(L, at);
            }
            s->rank_of[k] = m[0];
        }
    }
    return PS_OK;
}

void par_sim_member_coords(const par_sim *s, const par_layout *L, int32_t k,
                           int32_t q, int32_t c[PAR_NDIMS])
{
    const int32_t size[PAR_NDIMS] = {L->s.tp, L->s.cp, 1, L->s.dp, L->s.pp};
    memcpy(c, s->coord + (size_t)(k / s->p) * PAR_NDIMS, PAR_NDIMS * sizeof *c);
    c[PAR_PP] = k % s->p;
    for (int kk = 0; kk < 3; kk++) {
        int d = inst_dims[kk];
        if (!s->fold[d])
            continue;
        c[d] = q % size[d];
        q /= size[d];
    }
}

void par_sim_free(par_sim *s)
{
    free(s->rank_of);
    free(s->coord);
    free(s->member);
    memset(s, 0, sizeof *s);
}

/* Instance index of coordinates c (unfolded dimensions only). */
static int32_t instance_of(const par_sim *s, const int32_t *c)
{
    int32_t i = 0, scale = 1;
    for (int k = 0; k < 3; k++) {
        int d = inst_dims[k];
        i += c[d] * scale;
        scale *= s->unfolded[d];
    }
    return i;
}

int32_t par_sim_group(const par_sim *s, unsigned mask, int32_t i, int32_t *out)
{
    const int32_t *c = s->coord + (size_t)i * PAR_NDIMS;
    int32_t n = 1;
    for (int k = 0; k < 3; k++)
        if (mask & PAR_BIT(inst_dims[k]))
            n *= s->unfolded[inst_dims[k]];
    for (int32_t m = 0; m < n; m++) {
        int32_t y[PAR_NDIMS], left = m;
        memcpy(y, c, sizeof y);
        for (int k = 0; k < 3; k++) {
            int d = inst_dims[k];
            if (!(mask & PAR_BIT(d)))
                continue;
            y[d] = left % s->unfolded[d];
            left /= s->unfolded[d];
        }
        out[m] = instance_of(s, y);
    }
    return n;
}

int par_sim_group_head(const par_sim *s, unsigned mask, int32_t i)
{
    const int32_t *c = s->coord + (size_t)i * PAR_NDIMS;
    for (int k = 0; k < 3; k++)
        if ((mask & PAR_BIT(inst_dims[k])) && c[inst_dims[k]] != 0)
            return 0;
    return 1;
}
