/* Network: the static topology and routes (links, the route table of
 * explicit links, path figures). Clusters are built in net/cluster.c and
 * the run-time transfer models, FIFO and max-min fair, are in net/flow.c;
 * all share the private record in net/impl.h.
 *
 * Routes of explicit links are computed once per network by a
 * breadth-first search from every rank (O(ranks * (nodes + links))) into a
 * table with an entry per ordered pair; neighbours are visited in
 * increasing node id, so among equally short routes the one through lower
 * node ids wins, deterministically. A cluster's routes are those the
 * search would find, worked out from the two ranks when asked
 * (cluster_route, net/impl.h), and a mesh keeps its N*N links implicit:
 * neither stores a table (65536 ranks would need 4e9 entries); a mesh's
 * run-time state is per pair used (net/flow.c). */
#include "net/net.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"
#include "net/impl.h"

net *net_new(int32_t nranks)
{
    net *nw = calloc(1, sizeof *nw);
    if (!nw)
        return NULL;
    nw->nranks = nranks;
    nw->nnodes = nranks;
    nw->sharing = NET_FIFO;
    nw->max_hops = 1;
    return nw;
}

void net_free(net *nw)
{
    if (!nw)
        return;
    limit_free(nw->links);
    limit_free(nw->route_off);
    limit_free(nw->route_link);
    limit_free(nw->slack);
    net_run_free(nw);
    free(nw);
}

int32_t net_ranks(const net *nw)
{
    return nw->nranks;
}

int net_check_figures(double bandwidth, double latency, ps_err *err)
{
    if (!(bandwidth > 0) || isnan(bandwidth))
        return ps_errf(err, "link bandwidth must be positive, got %g",
                       bandwidth);
    if (!(latency >= 0) || !isfinite(latency))
        return ps_errf(err, "link latency must be zero or positive, got %g",
                       latency);
    return PS_OK;
}

int net_set_mesh(net *nw, double bandwidth, double latency, ps_err *err)
{
    if (net_check_figures(bandwidth, latency, err))
        return PS_ERR;
    nw->mesh = 1;
    nw->mesh_bw = bandwidth;
    nw->mesh_lat = latency;
    nw->max_hops = 1;
    return PS_OK;
}

int32_t net_add_switch(net *nw)
{
    assert(!nw->cl_gpus); /* a cluster's node ids are laid out */
    return nw->nnodes++;
}

int net_reserve_links(net *nw, int32_t count)
{
    if (count <= nw->links_cap)
        return 0;
    link *l = limit_realloc(nw->links, (size_t)count * sizeof *l);
    if (!l)
        return -1;
    nw->links = l;
    nw->links_cap = count;
    return 0;
}

int net_add_link(net *nw, int32_t a, int32_t b, double bandwidth,
                 double latency, ps_err *err)
{
    if (net_check_figures(bandwidth, latency, err))
        return PS_ERR;
    if (a < 0 || b < 0 || a >= nw->nnodes || b >= nw->nnodes || a == b)
        return ps_errf(err, "link %d -> %d: no such pair of nodes", (int)a,
                       (int)b);
    if (nw->cl_gpus) /* its routes are worked out from its layout */
        return ps_errf(err, "link %d -> %d: a cluster takes no more links",
                       (int)a, (int)b);
    if (nw->nlinks == nw->links_cap) {
        if (nw->links_cap > INT32_MAX / 2)
            return ps_errf(err, "more than %d links", INT32_MAX / 2);
        if (net_reserve_links(nw, nw->links_cap ? nw->links_cap * 2 : 64))
            return ps_errf(err, "out of memory");
    }
    nw->links[nw->nlinks++] = (link){a, b, bandwidth, latency};
    return PS_OK;
}

void net_set_sharing(net *nw, enum net_sharing sharing)
{
    nw->sharing = sharing;
    nw->sharing_set = 1;
}

int net_is_mesh(const net *nw)
{
    return nw->mesh;
}

/* ------------------------------------------------------------------ */
/* Routes                                                              */

static int cmp_link_target(const void *pa, const void *pb, void *ctx);

/* Adjacency in CSR form, neighbours sorted by target node. */
typedef struct adjacency {
    int32_t *off;  /* nnodes + 1 */
    int32_t *link; /* link ids */
} adjacency;

static int build_adjacency(const net *nw, adjacency *adj)
{
    adj->off = calloc((size_t)nw->nnodes + 1, sizeof *adj->off);
    adj->link = malloc(((size_t)nw->nlinks + 1) * sizeof *adj->link);
    if (!adj->off || !adj->link)
        return -1;
    for (int32_t i = 0; i < nw->nlinks; i++)
        adj->off[nw->links[i].a + 1]++;
    for (int32_t i = 0; i < nw->nnodes; i++)
        adj->off[i + 1] += adj->off[i];
    int32_t *fill = malloc(((size_t)nw->nnodes + 1) * sizeof *fill);
    if (!fill)
        return -1;
    memcpy(fill, adj->off, (size_t)nw->nnodes * sizeof *fill);
    for (int32_t i = 0; i < nw->nlinks; i++)
        adj->link[fill[nw->links[i].a]++] = i;
    free(fill);
    /* insertion sort per node by target: degrees are small */
    for (int32_t n = 0; n < nw->nnodes; n++) {
        for (int32_t i = adj->off[n] + 1; i < adj->off[n + 1]; i++) {
            int32_t v = adj->link[i], j = i;
            while (j > adj->off[n] &&
                   cmp_link_target(&adj->link[j - 1], &v, (void *)nw) > 0) {
                adj->link[j] = adj->link[j - 1];
                j--;
            }
            adj->link[j] = v;
        }
    }
    return 0;
}

static int cmp_link_target(const void *pa, const void *pb, void *ctx)
{
    const net *nw = ctx;
    int32_t a = nw->links[*(const int32_t *)pa].b;
    int32_t b = nw->links[*(const int32_t *)pb].b;
    return (a > b) - (a < b);
}

int net_finalize(net *nw, ps_err *err)
{
    if (nw->mesh || nw->cl_gpus)
        return PS_OK;
    int32_t n = nw->nranks;
    /* the table holds a route per ordered pair: 65536 ranks would need
     * 4e9 entries and more than 2^31 hops, which its int32 offsets cannot
     * address (a mesh or a cluster keeps no table and has no such limit) */
    if (n > NET_MAX_ROUTED_RANKS)
        return ps_errf(err,
                       "a network of explicit links has at most %d ranks (a "
                       "route per pair of ranks), got %d; a mesh or nodes x "
                       "gpus_per_node has no such limit",
                       NET_MAX_ROUTED_RANKS, (int)n);
    adjacency adj = {0};
    int32_t *via = malloc(((size_t)nw->nnodes + 1) * sizeof *via);
    int32_t *queue = malloc(((size_t)nw->nnodes + 1) * sizeof *queue);
    int32_t *path = malloc(((size_t)nw->nnodes + 1) * sizeof *path);
    limit_free(nw->route_off);
    limit_free(nw->route_link);
    nw->route_link = NULL;
    nw->route_off =
        limit_calloc((size_t)n * (size_t)n + 1, sizeof *nw->route_off);
    int rc = PS_OK;
    size_t used = 0, cap = 0;
    nw->max_hops = 1;
    if (!via || !queue || !path || !nw->route_off ||
        build_adjacency(nw, &adj)) {
        rc = ps_errf(err, "out of memory computing routes");
        goto done;
    }
    for (int32_t s = 0; s < n && rc == PS_OK; s++) {
        if (limit_stopped()) { /* O(n^2) routes: a signal or --timeout */
            rc = ps_errf(err, "stopped computing routes");
            break;
        }
        for (int32_t i = 0; i < nw->nnodes; i++)
            via[i] = -2;
        via[s] = -1;
        int32_t head = 0, tail = 0;
        queue[tail++] = s;
        while (head < tail) {
            int32_t u = queue[head++];
            for (int32_t k = adj.off[u]; k < adj.off[u + 1]; k++) {
                int32_t v = nw->links[adj.link[k]].b;
                if (via[v] != -2)
                    continue;
                via[v] = adj.link[k];
                /* ranks are endpoints: routes do not pass through a GPU
                 * unless the scenario's links make it a relay node */
                queue[tail++] = v;
            }
        }
        for (int32_t d = 0; d < n; d++) {
            nw->route_off[s * n + d] = (int32_t)used;
            if (d == s)
                continue;
            if (via[d] == -2) {
                rc = ps_errf(err, "no route from rank %d to rank %d", (int)s,
                             (int)d);
                break;
            }
            int32_t len = 0;
            for (int32_t v = d; v != s; v = nw->links[via[v]].a)
                path[len++] = via[v];
            if (len > nw->max_hops)
                nw->max_hops = len;
            if (used + (size_t)len > INT32_MAX) {
                rc = ps_errf(err, "routes too long: more than %d hops in all",
                             INT32_MAX);
                break;
            }
            if (used + (size_t)len > cap) {
                size_t ncap = cap ? cap * 2 : 1024;
                while (ncap < used + (size_t)len)
                    ncap *= 2;
                int32_t *r = limit_realloc(nw->route_link, ncap * sizeof *r);
                if (!r) {
                    rc = ps_errf(err, "out of memory computing routes");
                    break;
                }
                nw->route_link = r;
                cap = ncap;
            }
            for (int32_t i = 0; i < len; i++)
                nw->route_link[used + (size_t)i] = path[len - 1 - i];
            used += (size_t)len;
        }
    }
    nw->route_off[(size_t)n * (size_t)n] = (int32_t)used;
    if (rc == PS_OK)
        rc = net_set_slack(nw, err);
done:
    free(adj.off);
    free(adj.link);
    free(via);
    free(queue);
    free(path);
    return rc;
}

/* Slack links: a link out of a switch whose bandwidth is at least the sum
 * of the bandwidths into that switch never carries more than it can
 * (every flow over it came in over one of those links), so it is never a
 * max-min bottleneck. FAIR leaves such links out of its components: a
 * full-bisection core (a cluster with oversubscription 1) would otherwise
 * join every inter-node flow into one component and make each flow start
 * and end cost O(all of them), with the same rates in the end. */
int net_set_slack(net *nw, ps_err *err)
{
    limit_free(nw->slack);
    nw->slack = limit_calloc((size_t)nw->nlinks + 1, 1);
    double *in = limit_calloc((size_t)nw->nnodes + 1, sizeof *in);
    if (!nw->slack || !in) {
        limit_free(in);
        return ps_errf(err, "out of memory computing routes");
    }
    for (int32_t i = 0; i < nw->nlinks; i++)
        in[nw->links[i].b] += nw->links[i].bandwidth;
    for (int32_t i = 0; i < nw->nlinks; i++)
        if (nw->links[i].a >= nw->nranks &&
            nw->links[i].bandwidth >= in[nw->links[i].a])
            nw->slack[i] = 1;
    limit_free(in);
    return PS_OK;
}

int32_t net_route(const net *nw, int32_t src, int32_t dst,
                  const int32_t **links, net_route_buf *buf)
{
    if (src == dst) {
        *links = buf->link;
        return 0;
    }
    return route(nw, src, dst, links, buf);
}

void net_link_figures(const net *nw, int32_t id, double *bandwidth,
                      double *latency)
{
    *bandwidth = link_bw(nw, id);
    *latency = link_lat(nw, id);
}

void net_path(const net *nw, int32_t src, int32_t dst, double *latency,
              double *bandwidth)
{
    double lat = 0, bw = INFINITY;
    if (src != dst && nw->mesh) {
        lat = nw->mesh_lat;
        bw = nw->mesh_bw;
    } else if (src != dst) {
        const int32_t *links;
        net_route_buf buf;
        int32_t len = route(nw, src, dst, &links, &buf);
        for (int32_t i = 0; i < len; i++) {
            lat += link_lat(nw, links[i]);
            if (link_bw(nw, links[i]) < bw)
                bw = link_bw(nw, links[i]);
        }
    }
    *latency = lat;
    *bandwidth = bw;
}

double net_lone_time(const net *nw, int32_t src, int32_t dst, double bytes)
{
    if (src == dst)
        return 0;
    double lat, bw;
    net_path(nw, src, dst, &lat, &bw);
    return lat + bytes / bw;
}
