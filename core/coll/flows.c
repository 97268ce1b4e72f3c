/* Flows that run at once, costed alpha-beta on the network's routes: the
 * one question the cost models (coll/cost.c) and NCCL's pipelined tree
 * (coll/tree.c) ask of the network, below both. */
#include <math.h>
#include <stdlib.h>

#include "coll/impl.h"

/* Alpha-beta of flows that run at once (one step of an algorithm): flow f
 * from cluster rank src[f] to dst[f] gets lat[f], its route's latency, and
 * bw[f], the smallest bandwidth / k over its route's links, k being how
 * many of the flows cross that link. Under max-min fair sharing a flow
 * never gets less than that share (progressive filling raises all flows
 * together until a link is full) and gets exactly that when the flows are
 * alike, as in a ring step. FIFO runs the k flows one after the other,
 * each holding its route, so lat[f] is multiplied by the largest k on the
 * route too. A flow with src == dst gets 0 and INFINITY. The flows per
 * link are counted in an array indexed by link id (a mesh's one implicit
 * id, NET_MESH_LINK, in the last slot), O(H) for H hops in all: the cost
 * models call this once per step or range of steps, thousands of times
 * for a tree on 64 ranks. Returns 0, or -1 when out of memory. */
int coll_flows_ab(const net *nw, const int32_t *src, const int32_t *dst,
                  int64_t nf, double *lat, double *bw)
{
    const int32_t *links;
    net_route_buf one;
    int32_t nl = net_links(nw, NULL, 0);
    int32_t *cnt = calloc((size_t)nl + 1, sizeof *cnt);
    if (!cnt)
        return -1;
    for (int64_t f = 0; f < nf; f++) {
        int32_t len = net_route(nw, src[f], dst[f], &links, &one);
        for (int32_t i = 0; i < len; i++)
            cnt[links[i] >= 0 && links[i] < nl ? links[i] : nl]++;
    }
    int fifo = net_sharing_of(nw) == NET_FIFO;
    for (int64_t f = 0; f < nf; f++) {
        int32_t len = net_route(nw, src[f], dst[f], &links, &one);
        double l = 0, b = INFINITY, kmax = 1;
        for (int32_t i = 0; i < len; i++) {
            double k = cnt[links[i] >= 0 && links[i] < nl ? links[i] : nl], lb,
                   ll;
            net_link_figures(nw, links[i], &lb, &ll);
            l += ll;
            if (lb / k < b)
                b = lb / k;
            if (k > kmax)
                kmax = k;
        }
        lat[f] = fifo ? l * kmax : l;
        bw[f] = b;
    }
    free(cnt);
    return 0;
}
