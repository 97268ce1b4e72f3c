/* NCCL's graph as its tuner sees it across nodes: how many channels a
 * ring (and the tree, doubled alike) runs and at what per-channel speed,
 * from ncclTopoCompute's first pass and ncclTopoDupChannels (search.cc,
 * NCCL 2.30.7). The cost models (coll/cost.c), the protocol caps
 * (coll/proto.c, coll/choose.c) and the generators (coll/coll.c) all take the
 * channel count from here. A pure function of the spec and the network. */
#include "coll/coll.h"

#include "coll/impl.h"

/* The per-channel speed (GB/s) at which ncclTopoCompute's first pass
 * finds a ring graph across nodes, one channel per NIC: the fastest of the
 * generation's speedArrayInter (search.cc, NCCL 2.30.7: sm100 from
 * compute capability 100, sm90 from 90, else the base array) not above the
 * GPU's path to the next node (its slowest entry if all are). On a cluster
 * (net_build_cluster) that path's first hop, the GPU-NIC link, which has
 * the NIC's bandwidth: NCCL's search sees the NIC, not the fabric behind
 * it (oversubscription); elsewhere the route's bottleneck. The figures are
 * quantized as NCCL's: a 25 GB/s HDR NIC gives 24, a 50 GB/s NDR NIC 48. */
static double search_speed(int cc, const net *nw, int32_t src, int32_t dst,
                           int first_hop)
{
    static const double base[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0,
                                  12.0, 10.0, 9.0,  7.0,  6.0,  5.0,  4.0,
                                  3.0,  2.4,  1.2,  0.24, 0.12};
    static const double sm90[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0,
                                  22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                                  3.0,  2.4,  1.2,  0.24, 0.12};
    static const double sm100[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0,
                                   30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0,
                                   6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
    const double *a = cc >= 100 ? sm100 : cc >= 90 ? sm90 : base;
    size_t n = cc >= 100  ? sizeof sm100 / sizeof *sm100
               : cc >= 90 ? sizeof sm90 / sizeof *sm90
                          : sizeof base / sizeof *base;
    double lat, bw;
    const int32_t *links;
    net_route_buf one;
    if (first_hop && net_route(nw, src, dst, &links, &one) > 0)
        net_link_figures(nw, links[0], &bw, &lat);
    else
        net_path(nw, src, dst, &lat, &bw);
    size_t i = 0;
    while (i + 1 < n && a[i] > bw / 1e9)
        i++;
    return a[i];
}

/* Rings on whole nodes run as several channels (coll/algo.c,
 * ring_channels): NCCL's ring graph, the nChannels its tuner multiplies
 * the per-channel caps by (coll_proto_cap). One ring when the ranks are
 * not whole nodes (ranks_per_node < 2, fewer than two nodes) or on a mesh,
 * where every pair has its own link and there are no NICs to spread over
 * (more rings would only stack flows on the same intra-node pair links).
 * Otherwise ncclTopoCompute's first pass (search.cc, NCCL 2.30.7, commit
 * 5067397) finds one channel per NIC (ranks_per_node on an explicit
 * topology) at its speed, search_speed below: also where two GPUs share a
 * NIC, since on 8 A100s with 4 HDR NICs it finds 4 x 24 GB/s first and
 * the 8 x 12 it finds later ties at 96, which ncclTopoCompareGraphs does
 * not take (it wants more nChannels x bw or fewer hops; so in 2.15.5 too).
 * Then ncclTopoDupChannels (search.cc, since 2.18.3) doubles nChannels, up
 * to maxChannels (MAXCHANNELS / 2 = 32 for the ring, init.cc), and halves
 * bwIntra and bwInter, unless bwIntra < 25 GB/s, or the compute capability
 * is above 80 (Hopper on) with bwIntra < 50 and nChannels > 4. So DGX A100
 * (8 x 24) and DGX H100 (8 x 48) stay, 4 NDR NICs on H100 (4 x 48) give 8
 * x 24, and an A100 stays at one channel per NIC (HDR: 24 < 25). The tree
 * graph (maxChannels = the ring's nChannels) is doubled alike, and
 * nChannels x bw, the `graph` of the tree's cap, does not change. Without
 * a compute capability (spec->hw.cc 0) nothing is doubled: no caps apply
 * and the rule depends on it. */
int32_t coll_ring_channels(const coll_spec *spec, const net *nw,
                           const coll_view *v)
{
    int32_t g = spec->ranks_per_node;
    if (g < 2 || v->N % g || v->N / g < 2 || net_is_mesh(nw))
        return 1;
    int32_t nics = net_nics_per_node(nw, g);
    int32_t C = nics > 0 ? nics : g;
    int cc = spec->hw.cc;
    if (cc <= 0 || C >= 32)
        return C;
    double bw = search_speed(cc, nw, v->rank[0], v->rank[g], nics > 0);
    if (bw < 25.0 || (cc > 80 && bw < 50.0 && C > 4))
        return C;
    return 2 * C < 32 ? 2 * C : 32;
}
