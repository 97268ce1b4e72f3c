/* NCCL's protocols (LL, LL128, Simple) for the collectives: names, and the
 * two ways a protocol changes a collective, both from NCCL's tuner
 * (src/graph/tuning.cc, ncclTunerConstantsDefaults and ncclTopoTuneModel,
 * NCCL 2.30.7, NVIDIA/nccl commit 5067397): the bytes on the wire per byte
 * of payload, and a fixed latency per collective and per step. */
#include "coll.h"

#include <math.h>
#include <string.h>

#include "coll_int.h"

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

/* Wire bytes per payload byte. LL: a 16-byte line holds 8 bytes of data
 * and 8 of flags (tuning.cc: ring LL busBw * .5); LL128: a 128-byte line
 * holds 120 bytes of data (tuning.cc: "0.92 /\*120.0/128.0*\/"); Simple:
 * the data alone. */
double coll_proto_wire(int proto)
{
    switch (proto) {
    case COLL_LL: return 2.0;
    case COLL_LL128: return 128.0 / 120.0;
    default: return 1.0;
    }
}

/* NVLS (NVLink SHARP) allreduce on one node: each GPU reads its shard of
 * the reduced array from the switch (multimem.ld_reduce: the switch pulls
 * that shard from every GPU and adds) and writes it back to all
 * (multimem.st: the switch multicasts), so a GPU's NVLink carries T + T/N
 * each way, against 2T(N - 1)/N for the ring. pipesim runs it as the
 * direct allreduce's pattern (a reduce-scatter and an allgather step, each
 * GPU sending T(N - 1)/N per step) with every transfer scaled to carry that
 * volume, (N + 1) / (2(N - 1)), and divided by NCCL's nvlsEfficiency for
 * Hopper, 0.85 (tuning.cc). */
#define COLL_NVLS_EFFICIENCY 0.85

double coll_wire(int algo, int proto, int32_t N)
{
    double w = coll_proto_wire(proto);
    if (algo == COLL_NVLS && N >= 2)
        w *= (N + 1.0) / (2.0 * (N - 1)) / COLL_NVLS_EFFICIENCY;
    return w;
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
 * ranks. Not modelled: the network post overhead that raises ring
 * intra-node steps to 1 us (3 us for Simple) on several nodes. */
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

int32_t coll_proto_nodes(const coll_spec *spec, int32_t N)
{
    int32_t g = spec->ranks_per_node;
    return g >= 1 && N % g == 0 ? N / g : N;
}

/* The fixed latency a protocol adds to the simulated collective: NCCL's
 * base latency, and per step the excess of the protocol's hop latency over
 * LL's. The simulated hops pay the links' own latency, which stands for
 * what LL pays (LL has no synchronisation beyond the data's own flags:
 * its hop latency is the raw NVLink or network latency); LL128 and Simple
 * wait longer per step (Simple fences its data and then writes a flag).
 * The steps are NCCL's: ring 2(N - 1) for allreduce of which 2(nodes - 1)
 * cross nodes; tree 2((ppn - 1) intra + log2(nodes) inter). Nodes: N /
 * ranks_per_node, or N (one rank per node) when unknown. 0 for
 * COLL_PROTO_NONE and for algorithms without protocols. */
double coll_proto_overhead(const coll_spec *spec, int32_t N, int algo,
                           int proto)
{
    if (proto <= COLL_PROTO_NONE || proto >= COLL_NPROTOS ||
        !coll_algo_has_proto(algo) || N < 2)
        return 0;
    int a = row_of(algo), p = proto - COLL_LL;
    int32_t nodes = coll_proto_nodes(spec, N);
    double dnvl = hw_nvl[a][p] - hw_nvl[a][0];
    double dnet = hw_net[a][p] - hw_net[a][0];
    if (algo == COLL_NVLS) /* Simple only: its whole hop latency */
        dnvl = hw_nvl[a][p], dnet = hw_net[a][p];
    double t = base_lat[a][p] + tuner_lat(algo, spec->op, N, nodes, dnvl, dnet);
    return t * 1e-6;
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
    return (base_lat[a][p] +
            tuner_lat(algo, spec->op, N, nodes, hw_nvl[a][p], hw_net[a][p])) *
           1e-6;
}
