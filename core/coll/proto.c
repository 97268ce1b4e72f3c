/* NCCL's protocols (LL, LL128, Simple) for the collectives: names, and the
 * two ways a protocol changes a collective, both from NCCL's tuner
 * (src/graph/tuning.cc, ncclTunerConstantsDefaults and ncclTopoTuneModel,
 * NCCL 2.30.7, NVIDIA/nccl commit 5067397): the bytes on the wire per byte
 * of payload, and a fixed latency per collective and per step. */
#include "coll/coll.h"

#include <math.h>
#include <string.h>

#include "coll/impl.h"

static const char *const proto_names[COLL_NPROTOS] = {"none", "ll", "ll128",
                                                      "simple"};

const char *coll_proto_name(int proto)
{
    if (proto == COLL_PROTO_AUTO)
        return "auto";
    return proto >= 0 && proto < COLL_NPROTOS ? proto_names[proto] : "?";
}

int coll_parse_proto(const char *name, int *proto, ps_err *err)
{
    if (name && strcmp(name, "auto") == 0) {
        *proto = COLL_PROTO_AUTO;
        return PS_OK;
    }
    for (int p = 0; p < COLL_NPROTOS; p++)
        if (name && strcmp(name, proto_names[p]) == 0) {
            *proto = p;
            return PS_OK;
        }
    return ps_errf(err,
                   "unknown protocol '%s' (expected ll, ll128, simple, auto, "
                   "none)",
                   name ? name : "");
}

int coll_algo_has_proto(int algo)
{
    return algo == COLL_RING || algo == COLL_TREE || algo == COLL_NVLS;
}

int coll_default_protocol(enum coll_op op, int algo, unsigned candidates,
                          const coll_hw *hw)
{
    if (!hw || hw->cc <= 0 || (unsigned)op >= COLL_NOPS)
        return COLL_PROTO_NONE; /* textbook links: no NCCL to follow */
    if (algo != COLL_AUTO)
        return coll_algo_has_proto(algo) ? COLL_PROTO_AUTO : COLL_PROTO_NONE;
    int any = 0;
    for (const int *a = coll_op_algos_[op]; *a >= 0; a++) {
        if (candidates && !(candidates & (1u << *a)))
            continue;
        if (coll_algo_has_proto(*a))
            any = 1;
        else if (candidates)
            return COLL_PROTO_NONE; /* the caller named a textbook one */
    }
    return any ? COLL_PROTO_AUTO : COLL_PROTO_NONE;
}

/* How a protocol changes a collective's bandwidth, as ncclTopoTuneModel
 * does (tuning.cc, "Various model refinements"): NCCL's bus bandwidth of
 * (algorithm, protocol) is min(links x efficiency, cap). pipesim's links
 * are the simulated network, so the efficiency becomes wire bytes per
 * payload byte (1 / efficiency) and the cap a floor on the wire factor
 * (coll_cost_wire, coll/cost.c): with it the simulated bandwidth at large
 * sizes is min(the network's x efficiency, the cap). The caps are the
 * GPU's and the CPU's, not the links': LL's (llMaxBw) is the rate at which
 * a GPU's threads poll LL's flags, per GPU generation on one node and per
 * CPU vendor across nodes (there LL's flags travel through host memory);
 * LL128's and the tree's are per channel (one thread block each), times
 * NCCL's channel count. Inflating the bytes makes the slower transfers
 * occupy their links for longer than NCCL's do: a collective that shares
 * links with other traffic slows it a little more than it should. */

/* Efficiencies (bus bandwidth per link bandwidth). Ring: LL .5 (8 bytes of
 * data and 8 of flags per 16-byte line), LL128 .92 (120 of 128 bytes,
 * "0.92 /\*120.0/128.0*\/"), Simple 1. Tree (allreduce): .92 for every
 * protocol, LL then / 3.8, LL128 x 7/9 on one node and x 120/128 across
 * nodes. nodes: the nodes NCCL's model sees. */
double coll_proto_eff(int algo, int proto, int32_t nodes)
{
    if (algo == COLL_RING)
        return proto == COLL_LL ? .5 : proto == COLL_LL128 ? .92 : 1.0;
    if (algo == COLL_TREE && proto > COLL_PROTO_NONE)
        return .92 * (proto == COLL_LL ? 1.0 / 3.8
                      : proto == COLL_LL128
                          ? (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0)
                          : 1.0);
    return 1.0;
}

/* NVLS (NVLink SHARP) allreduce on one node: each GPU reads its shard of
 * the reduced array from the switch (multimem.ld_reduce: the switch pulls
 * that shard from every GPU and adds) and writes it back to all
 * (multimem.st: the switch multicasts), so a GPU's NVLink carries T + T/N
 * each way, against 2T(N - 1)/N for the ring. pipesim runs it as the
 * direct allreduce's pattern (a reduce-scatter and an allgather step, each
 * GPU sending T(N - 1)/N per step) with every transfer scaled to carry that
 * volume, (N + 1) / (2(N - 1)), and divided by NCCL's nvlsEfficiency
 * (tuning.cc): Hopper 0.85, Blackwell 0.74; Hopper's when the compute
 * capability is unknown (NVLS came with Hopper). */
static double nvls_efficiency(int cc)
{
    return cc >= 100 ? 0.74 : 0.85;
}

double coll_wire(const coll_spec *spec, int algo, int proto, int32_t N)
{
    double w = 1 / coll_proto_eff(algo, proto, coll_proto_nodes(spec, N));
    if (algo == COLL_NVLS && N >= 2)
        w *= (N + 1.0) / (2.0 * (N - 1)) / nvls_efficiency(spec->hw.cc);
    return w;
}

/* The caps, GB/s of bus bandwidth (ncclTunerConstantsDefaults, tuning.cc):
 * [generation][nodes 1, 2, more], generations (compCapIndex) Volta (below
 * 80), Ampere (80), Hopper (90), Blackwell (100 and up). llMaxBws' row is
 * the generation on one node and the CPU across nodes (0 Intel and the
 * rest, 1 AMD: "Ampere-N1/AMD-N2/AMD-N4"); the per-channel ones are
 * multiplied by NCCL's channels. */
static const double ll_max_bw[4][3] = {
    {39.0, 39.0, 20.4},
    {87.7, 22.5, 19.0},
    {141.0, 45.0, 35.0},
    {2 * 141.0, 2 * 45.0, 2 * 35.0},
};
static const double per_ch_ring_ll128[4][3] = {{20.0, 20.0, 20.0},
                                               {20.0, 20.0, 20.0},
                                               {36.7, 36.7, 36.7},
                                               {40.0, 40.0, 40.0}};
static const double per_ch_tree_ll128[4][3] = {{20.0, 20.0, 20.0},
                                               {20.0, 20.0, 20.0},
                                               {36.7, 36.7, 29.0},
                                               {55.6, 31.67, 20.0}};
static const double per_ch_tree[4][3] = {{26.5, 18.5, 10.0},
                                         {24.0, 23.6, 17.8},
                                         {38.7, 41.4, 36.0},
                                         {70.0, 42.8, 24.0}};

static int cc_index(int cc)
{
    return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}

/* The cap on the bus bandwidth of (algo, proto), B/s (INFINITY: none), on
 * `nodes` nodes with NCCL's `channels` (0: unknown, no per-channel caps):
 * its graph's nChannels, after ncclTopoDupChannels (coll_ring_channels),
 * which halves the per-channel bw as it doubles them, so that nChannels x
 * bw (`graph` below) stays and only the per-channel caps grow.
 * NCCL applies them in this order (tuning.cc):
 *   ring LL     min(llMaxBw, bw .5)
 *   ring LL128  min(bw .92, nCh perChMaxRingLL128Bw)
 *   tree        min(bw .92, nCh perChMaxTreeBw), then LL: min(/ 3.8,
 *               llMaxBw); LL128: min(x 7/9 or 120/128, nCh
 *               perChMaxTreeLL128Bw)
 * so the tree's own cap is scaled by the protocol's factor too. bw there
 * is nCh x the tree graph's bandwidth per channel (bwIntra on 1-2 nodes,
 * bwInter beyond), which NCCL's search finds equal to the ring graph's on
 * the systems pipesim models (tests/lua/nccl_tuner_model.lua): `graph`,
 * the bus bandwidth the ring reaches through the same channels (INFINITY:
 * unknown). The tree's .92 is thus a cap on the graph's bandwidth, not
 * only an efficiency on the simulated tree's (coll_proto_eff): where the
 * simulated tree moves more than half of it (on 2 nodes each node is the
 * root of one tree and a leaf of the other, and DGX A100's NVLink, not its
 * NICs, bounds the tree), NCCL's model still gives the tree .92 x graph /
 * 2 ("Convert bus BW to algorithm BW": x .5 for the tree on any number of
 * nodes), and this cap holds it there. None without a compute capability
 * (spec->hw.cc 0), nor for Simple rings and nvls. */
double coll_proto_cap(const coll_spec *spec, int algo, int proto, int32_t nodes,
                      int32_t channels, double graph)
{
    int cc = spec->hw.cc;
    if (cc <= 0 || proto <= COLL_PROTO_NONE || proto >= COLL_NPROTOS ||
        (algo != COLL_RING && algo != COLL_TREE))
        return INFINITY;
    int g = cc_index(cc), n = nodes <= 1 ? 0 : nodes == 2 ? 1 : 2;
    int row = nodes <= 1 ? g : spec->hw.cpu == COLL_CPU_AMD ? 1 : 0;
    double ll = ll_max_bw[row][n], ch = channels > 0 ? channels : INFINITY;
    double cap = INFINITY;
    if (algo == COLL_RING) {
        if (proto == COLL_LL)
            cap = ll;
        else if (proto == COLL_LL128)
            cap = ch * per_ch_ring_ll128[g][n];
    } else {
        double tree = fmin(.92 * graph / 1e9, ch * per_ch_tree[g][n]);
        if (proto == COLL_LL)
            cap = fmin(tree / 3.8, ll);
        else if (proto == COLL_LL128)
            cap = fmin(tree * (nodes <= 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                       ch * per_ch_tree_ll128[g][n]);
        else
            cap = tree;
    }
    return cap * 1e9;
}

/* ncclTunerConstantsDefaults, microseconds, [LL, LL128, Simple]:
 * baseLatencies (per collective: launch, setup) and hwLatencies (per step)
 * for NVLink and network hops, by algorithm. */
static const double base_lat[3][3] = {
    {6.6, 14.0, 8.4}, /* ring */
    {6.8, 14.0, 8.4}, /* tree */
    {0, 0, 0},        /* nvls */
};
static const double hw_nvl[3][3] = {
    {0.6, 1.9, 3.4},  /* ring */
    {0.6, 1.25, 4.0}, /* tree */
    {0, 0, 25.0},     /* nvls */
};
static const double hw_net[3][3] = {
    {2.7, 4.0, 14.0}, /* ring */
    {5.0, 8.5, 14.0}, /* tree */
    {0, 0, 18.0},     /* nvls */
};

static int row_of(int algo)
{
    return algo == COLL_RING ? 0 : algo == COLL_TREE ? 1 : 2;
}

/* The per-step part of NCCL's latency of algo as ncclTopoTuneModel counts
 * it (microseconds), with nvl and net the latency of an NVLink and a
 * network step: NCCL's own, or the excess over LL's (below). nodes x ppn
 * ranks. */
static double tuner_lat(int algo, enum coll_op op, int32_t N, int32_t nodes,
                        double nvl, double hop_net)
{
    double ppn = (double)N / nodes, t = 0;
    if (algo == COLL_RING) {
        int32_t nsteps = op == COLL_ALLREDUCE ? 2 * (N - 1)
                         : op == COLL_REDUCE_SCATTER || op == COLL_ALLGATHER
                             ? N - 1
                             : N;
        int32_t inter = nodes == 1             ? 0
                        : op == COLL_ALLREDUCE ? 2 * (nodes - 1)
                                               : nodes - 1;
        t = (nsteps - inter) * nvl + inter * hop_net;
    } else if (algo == COLL_TREE) {
        int32_t lg = 0;
        while ((1 << (lg + 1)) <= nodes)
            lg++; /* log2i */
        t = 2 * ((ppn - 1) * nvl + lg * hop_net);
    } else { /* nvls: one node (NCCL disables it across nodes without
                CollNet) */
        t = nvl + (nodes > 1 ? hop_net : 0);
    }
    return t;
}

/* The network post overhead (getNetOverhead, tuning.cc), microseconds:
 * "Inter-node rings still have to launch nsteps * net overhead", so on
 * several nodes every step of an allreduce, reduce-scatter or allgather
 * ring takes at least 2 us on AMD x86 CPUs and 1 us on Intel and the rest
 * (NCCL's default branch, also for an unknown CPU), three times that with
 * Simple. 0 elsewhere (one node, other algorithms and ops). */
static double net_overhead(const coll_spec *spec, int algo, int proto,
                           int32_t nodes)
{
    enum coll_op op = spec->op;
    if (algo != COLL_RING || nodes <= 1 ||
        (op != COLL_ALLREDUCE && op != COLL_REDUCE_SCATTER &&
         op != COLL_ALLGATHER))
        return 0;
    double ov = spec->hw.cpu == COLL_CPU_AMD ? 2.0 : 1.0;
    return proto == COLL_SIMPLE ? 3 * ov : ov;
}

int32_t coll_proto_nodes(const coll_spec *spec, int32_t N)
{
    int32_t g = spec->ranks_per_node;
    return g >= 1 && N % g == 0 ? N / g : N;
}

/* The fixed latency a protocol adds to the simulated collective: NCCL's
 * base latency, and per step the excess of the protocol's hop latency (at
 * least the network post overhead on the intra-node steps of a ring across
 * nodes) over ring LL's. The simulated hops pay the links' own latency, which
 * stands for what a ring LL hop pays (LL has no synchronisation beyond the
 * data's own flags: its hop latency is the raw NVLink or network latency);
 * LL128 and Simple wait longer per step (Simple fences its data and then
 * writes a flag), and a tree step across nodes longer than a ring's (5.0 us
 * with LL against 2.7: a tree rank waits on up to three peers). The steps
 * are NCCL's: ring 2(N - 1) for allreduce of which 2(nodes - 1) cross nodes;
 * tree 2((ppn - 1) intra + log2(nodes) inter). Nodes: N / ranks_per_node, or N
 * (one rank per node) when unknown. 0 for COLL_PROTO_NONE and for algorithms
 * without protocols. */
/* The ring's plateau (ncclTopoGetAlgoTime, tuning.cc): a Simple allreduce
 * ring across nodes takes NCCL's latency x 1.4 (x 1.9 before Ampere) once
 * every rank's share of a channel is 64 bytes or more; NCCL's channels
 * there (comm->nChannels) are the search's doubled (connect.cc duplicates
 * rings). The excess over NCCL's latency, seconds, added to the overhead
 * with `channels` the search's (coll_ring_channels). */
static double ring_plateau(const coll_spec *spec, int32_t N, int algo,
                           int proto, int32_t channels)
{
    if (algo != COLL_RING || proto != COLL_SIMPLE ||
        spec->op != COLL_ALLREDUCE || coll_proto_nodes(spec, N) <= 1 ||
        (double)spec->bytes / (2.0 * (channels > 0 ? channels : 1) * N) < 64)
        return 0;
    double f = spec->hw.cc > 0 && spec->hw.cc < 80 ? 1.9 : 1.4;
    return (f - 1) * coll_proto_nccl_latency(spec, N, algo, proto);
}

/* NCCL's network hop latency of (algo, proto) on nodes x N / nodes ranks:
 * "With ppn=1 latencies are fully exposed, use the Tree network latency"
 * (ncclTopoTuneModel), else the algorithm's own. */
static double hop_net(int a, int p, int32_t N, int32_t nodes)
{
    return N == nodes ? hw_net[1][p] : hw_net[a][p];
}

double coll_proto_overhead(const coll_spec *spec, int32_t N, int algo,
                           int proto, int32_t channels)
{
    if (proto <= COLL_PROTO_NONE || proto >= COLL_NPROTOS ||
        !coll_algo_has_proto(algo) || N < 2)
        return 0;
    int a = row_of(algo), p = proto - COLL_LL;
    int32_t nodes = coll_proto_nodes(spec, N);
    double nvl = fmax(hw_nvl[a][p], net_overhead(spec, algo, proto, nodes));
    /* the excess over the raw hop the links already charge: ring LL's
     * (0.6 and 2.7 us, the cluster presets' link latencies), for every
     * algorithm, so that a tree step across nodes costs NCCL's tree figure
     * (LL 5.0 us, 2.3 over the link) and not the link's latency alone */
    double dnvl = nvl - hw_nvl[0][0];
    double dnet = hop_net(a, p, N, nodes) - hw_net[0][0];
    if (algo == COLL_NVLS) /* Simple only: its whole hop latency */
        dnvl = hw_nvl[a][p], dnet = hw_net[a][p];
    double t = base_lat[a][p] + tuner_lat(algo, spec->op, N, nodes, dnvl, dnet);
    return t * 1e-6 + ring_plateau(spec, N, algo, proto, channels);
}

/* NCCL's treeCorrectionFactor (tuning.cc, NCCL 2.30.7): "Trees are not
 * perfectly sticking to the model for medium sizes. Applying a static
 * correction factor is not ideal but works quite well." Per protocol (LL,
 * LL128, Simple) and power of two from 64 B, applied to the tree's
 * bandwidth by ncclTopoGetAlgoTime for allreduce while log2i(nBytes >> 6)
 * < 23 (the table's last entry is never read). */
static const double tree_corr[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

double coll_proto_tree_correction(int proto, int64_t bytes)
{
    if (proto <= COLL_PROTO_NONE || proto >= COLL_NPROTOS || bytes < 64)
        return 1.0;
    int ls = -1;
    for (int64_t x = bytes >> 6; x >= 1; x >>= 1)
        ls++;
    return ls < 23 ? tree_corr[proto - COLL_LL][ls] : 1.0;
}

/* NCCL's own latency prediction for (algo, proto), seconds: base latency
 * plus its per-step hop latencies (README "Against NCCL" sets it beside
 * pipesim's simulated times). */
double coll_proto_nccl_latency(const coll_spec *spec, int32_t N, int algo,
                               int proto)
{
    if (proto <= COLL_PROTO_NONE || proto >= COLL_NPROTOS ||
        !coll_algo_has_proto(algo) || N < 2)
        return 0;
    int a = row_of(algo), p = proto - COLL_LL;
    int32_t nodes = coll_proto_nodes(spec, N);
    double nvl = fmax(hw_nvl[a][p], net_overhead(spec, algo, proto, nodes));
    return (base_lat[a][p] +
            tuner_lat(algo, spec->op, N, nodes, nvl, hop_net(a, p, N, nodes))) *
           1e-6;
}
