/* NCCL's tuner layer over the cost models (coll/cost.c): the wire bytes a
 * protocol sends under NCCL's caps on its bandwidth (coll/proto.c), the
 * predicted time of an (algorithm, protocol) pair, and `auto`'s choice of
 * the pair with the lowest predicted time, as NCCL's tuner picks
 * (src/graph/tuning.cc, NCCL 2.30.7). Pure functions: no engine. */
#include "coll/coll.h"

#include <math.h>

#include "coll/algo.h"
#include "coll/impl.h"

/* What the wire factor and the ranking need of the network, computed once
 * per algorithm (NAN: not yet): A, the algorithm bandwidth algo reaches at
 * large sizes at one wire byte (coll_cost_algbw), and graph, NCCL's graph
 * bandwidth nChannels x bw (the tree's cap, coll_proto_cap): the bus
 * bandwidth the ring reaches on the same channels. */
typedef struct net_bw {
    double A, graph;
} net_bw;

#define NET_BW_UNKNOWN ((net_bw){NAN, NAN})

/* coll_cost_wire with bw's figures, filling those it needs. */
static int wire_of(const coll_spec *spec, const net *nw, const coll_view *v,
                   int algo, int proto, net_bw *bw, double *wire, ps_err *err)
{
    int32_t N = v->N;
    *wire = coll_wire(spec, algo, proto, N);
    int32_t nodes = coll_proto_nodes(spec, N);
    int32_t ch =
        nodes > 1 ? coll_ring_channels(spec, nw, v) : spec->hw.channels;
    if (N < 2 || isinf(coll_proto_cap(spec, algo, proto, nodes, ch, INFINITY)))
        return PS_OK; /* no cap at all */
    double R;
    if (isnan(bw->graph)) {
        bw->graph = INFINITY;
        if (algo == COLL_TREE) {
            if (coll_cost_algbw(spec, nw, v, COLL_RING, &R))
                return ps_errf(err, "out of memory");
            bw->graph = R * coll_busbw_factor(spec->op, N);
        }
    }
    if (isnan(bw->A) && coll_cost_algbw(spec, nw, v, algo, &bw->A))
        return ps_errf(err, "out of memory");
    double cap = coll_proto_cap(spec, algo, proto, nodes, ch, bw->graph);
    /* the cap as algorithm bandwidth: NCCL's busBw x nRanks / nsteps for
     * the ring, x .5 for the tree (tuning.cc, "Convert bus BW to algorithm
     * BW") */
    double acap =
        algo == COLL_TREE ? cap * .5 : cap / coll_busbw_factor(spec->op, N);
    if (isfinite(bw->A) && bw->A / acap > *wire)
        *wire = bw->A / acap;
    return PS_OK;
}

int coll_cost_wire(const coll_spec *spec, const net *nw, const coll_view *v,
                   int algo, int proto, double *wire, ps_err *err)
{
    net_bw bw = NET_BW_UNKNOWN;
    return wire_of(spec, nw, v, algo, proto, &bw, wire, err);
}

/* coll_cost_predict_proto with bw's figures; *wire the wire factor. */
static int predict_proto(const coll_spec *spec, const net *nw,
                         const coll_view *v, int algo, int proto, net_bw *bw,
                         double *seconds, int32_t *chunks, double *wire,
                         ps_err *err)
{
    if (proto > COLL_PROTO_NONE && !coll_algo_has_proto(algo))
        return ps_errf(err,
                       "%s: protocol '%s' applies to ring, tree and nvls "
                       "(NCCL's algorithms), not %s",
                       coll_op_names_[spec->op], coll_proto_name(proto),
                       coll_algo_name(algo));
    if (algo == COLL_NVLS && !coll_nvls_applies(spec, v->N))
        return ps_errf(err, "allreduce: nvls does not apply here");
    if (algo == COLL_NVLS)
        proto = COLL_SIMPLE;
    coll_spec one = *spec; /* the protocol costed (NCCL's tree chunks) */
    one.protocol = proto;
    int rc = wire_of(spec, nw, v, algo, proto, bw, wire, err);
    if (rc == PS_OK)
        rc = coll_cost_predict(&one, nw, v, algo, (double)spec->bytes * *wire,
                               seconds, chunks, err);
    if (rc == PS_OK && spec->bytes > 0)
        *seconds += coll_proto_overhead(spec, v->N, algo, proto,
                                        coll_ring_channels(spec, nw, v));
    return rc;
}

int coll_cost_predict_proto(const coll_spec *spec, const net *nw,
                            const coll_view *v, int algo, int proto,
                            double *seconds, int32_t *chunks, ps_err *err)
{
    net_bw bw = NET_BW_UNKNOWN;
    double w;
    return predict_proto(spec, nw, v, algo, proto, &bw, seconds, chunks, &w,
                         err);
}

int coll_predict(const coll_spec *spec, const net *nw, int algo,
                 double *seconds, int32_t *chunks, ps_err *err)
{
    coll_view v;
    int rc = coll_check_spec(spec, nw, &v, err);
    if (rc == PS_OK && spec->protocol == COLL_PROTO_AUTO) {
        int p = COLL_PROTO_AUTO, a = algo;
        coll_spec one = *spec;
        one.candidates = 1u << algo;
        rc = coll_cost_choose(&one, nw, &v, &a, &p, seconds, chunks, err);
    } else if (rc == PS_OK) {
        rc = coll_cost_predict_proto(spec, nw, &v, algo, spec->protocol,
                                     seconds, chunks, err);
    }
    coll_view_free(&v);
    return rc;
}

/* The time auto ranks (algo, proto) by, given its prediction t and wire
 * factor w: t, but for NCCL's tree allreduce at least NCCL's tuner formula
 * with the tree's correction (ncclTopoGetAlgoTime, tuning.cc, NCCL
 * 2.30.7: latency + bytes / (bandwidth x treeCorrectionFactor)), on NCCL's
 * latency (coll_proto_nccl_latency, which the simulated tree pays on
 * NCCL's presets) and pipesim's large-size bandwidth (bw->A over w). Why:
 * auto predicts what NCCL picks, and NCCL picks by that formula; the
 * factor stands for the real tree's losses at medium sizes, of which the
 * pipeline's fill and drain, which t simulates, is one, so the larger of
 * the two is taken, never their sum (the fill is not counted twice). The
 * prediction (and the simulated time) stay the physical ones. */
static double tuner_rank(const coll_spec *spec, const coll_view *v, int algo,
                         int proto, double t, double w, const net_bw *bw)
{
    double cf = coll_proto_tree_correction(proto, spec->bytes);
    if (algo != COLL_TREE || spec->op != COLL_ALLREDUCE || cf >= 1 ||
        !(bw->A > 0) || !isfinite(bw->A))
        return t;
    return fmax(t, coll_proto_nccl_latency(spec, v->N, algo, proto) +
                       (double)spec->bytes * w / (cf * bw->A));
}

int coll_cost_choose(const coll_spec *spec, const net *nw, const coll_view *v,
                     int *algo, int *proto, double *pred, int32_t *chunks,
                     ps_err *err)
{
    int want = *proto;
    double best = INFINITY;
    *algo = -1;
    *pred = INFINITY;
    for (const int *a = coll_op_algos_[spec->op]; *a >= 0; a++) {
        if (spec->candidates && !(spec->candidates & (1u << *a)))
            continue;
        if (want != COLL_PROTO_NONE && !coll_algo_has_proto(*a))
            continue;
        int p0 = want == COLL_PROTO_AUTO ? COLL_LL : want;
        int p1 = want == COLL_PROTO_AUTO ? COLL_SIMPLE : want;
        if (*a == COLL_NVLS) { /* simple only, where the switch has it */
            if (!coll_nvls_applies(spec, v->N) ||
                (want != COLL_PROTO_AUTO && want != COLL_PROTO_NONE &&
                 want != COLL_SIMPLE))
                continue;
            p0 = p1 = COLL_SIMPLE;
        }
        net_bw bw = NET_BW_UNKNOWN; /* one algorithm's, for each protocol */
        for (int p = p0; p <= p1; p++) {
            double t, w;
            int32_t k;
            if (predict_proto(spec, nw, v, *a, p, &bw, &t, &k, &w, NULL))
                continue; /* does not apply here (hierarchical without
                             nodes) */
            if (p > COLL_PROTO_NONE && *a == COLL_TREE && isnan(bw.A) &&
                coll_cost_algbw(spec, nw, v, *a, &bw.A))
                return ps_errf(err, "out of memory");
            double r = tuner_rank(spec, v, *a, p, t, w, &bw);
            if (r < best) {
                best = r;
                *pred = t;
                *algo = *a;
                *proto = p;
                *chunks = k;
            }
        }
    }
    if (*algo < 0)
        return ps_errf(err,
                       want == COLL_PROTO_NONE
                           ? "%s: no candidate algorithm applies"
                           : "%s: no candidate algorithm has protocols "
                             "(ring, tree)",
                       coll_op_names_[spec->op]);
    return PS_OK;
}
