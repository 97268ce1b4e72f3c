/* The links a layout's groups cross: the fold rule of par/links.h. */
#include "par/links.h"

#include <stdlib.h>
#include <string.h>

/* One link of one route: which link, whose traffic (source rank and its
 * first link) and the source's coordinate in the dimension asked about. */
typedef struct use {
    int32_t link, src, first, coord;
} use;

static int cmp_use(const void *a, const void *b)
{
    const use *x = a, *y = b;
    if (x->link != y->link)
        return x->link < y->link ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

/* The cluster rank next to coordinates c (step +1 or -1, wrapping) in its
 * data-parallel group with context (pipeline group with pp != 0), in
 * Megatron's order of the group (cp fastest); -1 when the group has one
 * rank. */
static int32_t neighbour(const par_layout *L, const int32_t c[PAR_NDIMS],
                         int pp, int step)
{
    int32_t y[PAR_NDIMS], cp = L->s.cp, n = pp ? L->s.pp : cp * L->s.dp;
    if (n < 2)
        return -1;
    memcpy(y, c, sizeof y);
    if (pp) {
        y[PAR_PP] = (c[PAR_PP] + n + step) % n;
    } else {
        int32_t k = (c[PAR_CP] + cp * c[PAR_DP] + n + step) % n;
        y[PAR_CP] = k % cp;
        y[PAR_DP] = k / cp;
    }
    return par_rank(L, y);
}

/* Appends the links of the route from cluster rank a to b. */
static int add_route(const net *nw, int32_t a, int32_t b, int32_t coord,
                     use **u, int64_t *n, int64_t *cap)
{
    const int32_t *links;
    net_route_buf buf;
    int32_t len = net_route(nw, a, b, &links, &buf);
    if (*n + len > *cap) {
        int64_t c = *cap ? 2 * *cap + len : 256 + len;
        use *v = realloc(*u, (size_t)c * sizeof *v);
        if (!v)
            return -1;
        *u = v;
        *cap = c;
    }
    for (int32_t k = 0; k < len; k++)
        (*u)[(*n)++] = (use){links[k], a, links[0], coord};
    return 0;
}

/* Whether some link of the sorted uses carries two coordinates' traffic
 * beyond its bandwidth. */
static int overloaded(const net *nw, const use *u, int64_t n)
{
    for (int64_t a = 0; a < n;) {
        int64_t b = a;
        double load = 0, bw, lat;
        int mixed = 0;
        for (; b < n && u[b].link == u[a].link; b++) {
            mixed |= u[b].coord != u[a].coord;
            if (b == a || u[b].src != u[b - 1].src ||
                u[b].first != u[b - 1].first) {
                double fb;
                net_link_figures(nw, u[b].first, &fb, &lat);
                load += fb;
            }
        }
        net_link_figures(nw, u[a].link, &bw, &lat);
        if (mixed && load > bw * (1 + 1e-9))
            return 1;
        a = b;
    }
    return 0;
}

int par_fold_exact(const par_layout *L, enum par_dim d, const net *nw,
                   ps_err *err)
{
    if (L->dense.size[d] == 1 || net_is_mesh(nw))
        return 1;
    use *u = NULL;
    int64_t n = 0, cap = 0;
    int rc = PS_OK;
    for (int32_t i = 0; i < L->world && rc == PS_OK; i++) {
        int32_t c[PAR_NDIMS], me = par_cluster(L, i);
        par_coords(L, i, 0, c);
        for (int pp = 0; pp < 2 && rc == PS_OK; pp++)
            for (int step = -1; step <= 1 && rc == PS_OK; step += 2) {
                int32_t peer = neighbour(L, c, pp, step);
                if (peer >= 0 && peer != me &&
                    add_route(nw, me, peer, c[d], &u, &n, &cap))
                    rc = PS_ERR;
            }
    }
    int exact = 1;
    if (rc == PS_OK && n > 0) {
        qsort(u, (size_t)n, sizeof *u, cmp_use);
        exact = !overloaded(nw, u, n);
    }
    free(u);
    return rc == PS_OK ? exact : ps_errf(err, "out of memory");
}
