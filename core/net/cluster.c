/* Network: the DGX-like cluster (net_build_cluster, net/net.h has the
 * model). Its links are laid out node by node in a fixed order, so that a
 * route is worked out from the two ranks when asked (cluster_route,
 * net/impl.h) and nothing is stored per pair: building n GPUs costs O(n)
 * time and memory (4 links per GPU, 2 per NIC, one core link). The links
 * and their ids are those the cluster had when its routes were a table of
 * every pair (the breadth-first search of net_finalize, which
 * tests/unit/test_net.c still runs on the same links and compares). */
#include "net/net.h"

#include <math.h>

#include "base/limit.h"
#include "net/impl.h"

/* The figures of c, checked, with the defaults applied (*nics,
 * *over). */
static int check_cluster(const net *nw, const net_cluster *c, int32_t *nics,
                         double *over, ps_err *err)
{
    if (c->nodes < 1)
        return ps_errf(err, "cluster: nodes must be at least 1, got %d",
                       (int)c->nodes);
    if (c->gpus_per_node < 1)
        return ps_errf(err, "cluster: gpus_per_node must be at least 1, got %d",
                       (int)c->gpus_per_node);
    *nics = c->nics_per_node ? c->nics_per_node : c->gpus_per_node;
    if (*nics < 1 || *nics > c->gpus_per_node)
        return ps_errf(err,
                       "cluster: nics_per_node must be between 1 and "
                       "gpus_per_node (%d), got %d",
                       (int)c->gpus_per_node, (int)c->nics_per_node);
    *over = c->oversubscription == 0 ? 1 : c->oversubscription;
    if (!(*over >= 1) || !isfinite(*over))
        return ps_errf(err,
                       "cluster: oversubscription must be 1 or more, "
                       "got %g",
                       c->oversubscription);
    if ((int64_t)c->nodes * c->gpus_per_node != nw->nranks)
        return ps_errf(err,
                       "cluster: %d nodes x %d gpus is %lld ranks but the "
                       "network has %d",
                       (int)c->nodes, (int)c->gpus_per_node,
                       (long long)c->nodes * c->gpus_per_node, (int)nw->nranks);
    if (nw->mesh || nw->nlinks || nw->nnodes != nw->nranks || nw->cl_gpus)
        return ps_errf(err, "cluster: the network already has links");
    /* node and link ids are int32: ranks + a switch a node + the NICs +
     * 2, and 4 links a GPU + 2 a NIC + 1 */
    int64_t stride = 4 * (int64_t)c->gpus_per_node + 2 * (int64_t)*nics;
    if ((int64_t)c->nodes * stride + 1 > INT32_MAX)
        return ps_errf(err,
                       "cluster: %d nodes x %d gpus need more than %d "
                       "links",
                       (int)c->nodes, (int)c->gpus_per_node, INT32_MAX);
    return PS_OK;
}

/* The links of node n in cluster order (net/impl.h, cluster_route); the
 * node switch sw, the node's first NIC nic, the fabric's up and down
 * nodes. */
static int add_node(net *nw, const net_cluster *c, int32_t nics, int32_t n,
                    int32_t sw, int32_t nic, int32_t up, int32_t down,
                    ps_err *err)
{
    int32_t g = c->gpus_per_node;
    double ibw = c->intra_bw, ilat = c->intra_lat / 2;
    double xbw = c->inter_bw, xlat = c->inter_lat / 2;
    for (int32_t l = 0; l < g; l++) {
        int32_t r = n * g + l;
        int32_t k = nic + (int32_t)((int64_t)l * nics / g);
        if (net_add_link(nw, r, sw, ibw, ilat, err) ||
            net_add_link(nw, sw, r, ibw, ilat, err) ||
            net_add_link(nw, r, k, xbw, 0, err) ||
            net_add_link(nw, k, r, xbw, 0, err))
            return PS_ERR;
    }
    for (int32_t k = 0; k < nics; k++)
        if (net_add_link(nw, nic + k, up, xbw, xlat, err) ||
            net_add_link(nw, down, nic + k, xbw, xlat, err))
            return PS_ERR;
    return PS_OK;
}

size_t net_cluster_bytes(const net_cluster *c)
{
    if (c->nodes < 1 || c->gpus_per_node < 1)
        return 0;
    int64_t g = c->gpus_per_node, nics = c->nics_per_node;
    if (nics < 1 || nics > g)
        nics = g;
    int64_t links = c->nodes * (4 * g + 2 * nics) + 1;
    int64_t nodes = c->nodes * (g + 1 + nics) + 2;
    return (size_t)links * (sizeof(link) + 1) + (size_t)nodes * sizeof(double);
}

int net_build_cluster(net *nw, const net_cluster *c, ps_err *err)
{
    int32_t nics = 0;
    double over = 1;
    if (check_cluster(nw, c, &nics, &over, err))
        return PS_ERR;
    ps_err sub;
    if (net_check_figures(c->intra_bw, c->intra_lat, &sub))
        return ps_errf(err, "cluster: intra: %s", sub.msg);
    if (net_check_figures(c->inter_bw, c->inter_lat, &sub))
        return ps_errf(err, "cluster: inter: %s", sub.msg);
    int32_t g = c->gpus_per_node, stride = 4 * g + 2 * nics;
    int32_t nlinks = c->nodes * stride + 1;
    int32_t sw0 = nw->nranks;      /* node switches: sw0 + node */
    int32_t nic0 = sw0 + c->nodes; /* NICs: nic0 + node * nics + k */
    int32_t up = nic0 + c->nodes * nics, down = up + 1;
    if (net_reserve_links(nw, nlinks))
        return ps_errf(err, "out of memory for the cluster's %d links",
                       (int)nlinks);
    nw->nnodes = down + 1;
    double core = (double)c->nodes * nics * c->inter_bw / over;
    for (int32_t n = 0; n < c->nodes; n++)
        if (add_node(nw, c, nics, n, sw0 + n, nic0 + n * nics, up, down, err))
            return PS_ERR;
    if (net_add_link(nw, up, down, core, 0, err))
        return PS_ERR;
    if (net_set_slack(nw, err))
        return PS_ERR;
    nw->max_hops = c->nodes > 1 ? 5 : g > 1 ? 2 : 1;
    nw->cl_gpus = g;
    nw->cl_nics = nics;
    nw->cl_stride = stride;
    nw->cl_core = nlinks - 1;
    return PS_OK;
}

int32_t net_nics_per_node(const net *nw, int32_t gpus_per_node)
{
    return nw->cl_gpus > 0 && nw->cl_gpus == gpus_per_node ? nw->cl_nics : 0;
}

int net_foldable(const net *nw)
{
    return nw->cl_gpus > 0 && nw->cl_nics == nw->cl_gpus &&
           net_sharing_of(nw) == NET_FAIR && nw->slack &&
           nw->slack[nw->cl_core];
}

void net_set_image(net *nw, const int32_t *image)
{
    nw->image = nw->cl_gpus > 0 ? image : NULL;
}

int32_t net_node_of(const net *nw, int32_t rank)
{
    return nw->cl_gpus > 0 ? rank / nw->cl_gpus : -1;
}
