/* NCCL's tuner layer over the cost models (coll_cost.c): the wire bytes a
 * protocol sends under NCCL's caps on its bandwidth (coll_proto.c), the
 * predicted time of an (algorithm, protocol) pair, and `auto`'s choice of
 * the pair with the lowest predicted time, as NCCL's tuner picks
 * (src/graph/tuning.cc, NCCL 2.30.7). Pure functions: no engine. */
#include "coll.h"

#include <math.h>

#include "coll_algo.h"
#include "coll_int.h"

int coll_cost_wire(const coll_spec *spec, const net *nw, const coll_view *v,
                   int algo, int proto, double *wire, ps_err *err)
{
    int32_t N = v->N;
    *wire = coll_wire(spec, algo, proto, N);
    int32_t nodes = coll_proto_nodes(spec, N);
    int32_t ch =
        nodes > 1 ? coll_ring_channels(spec, nw, v) : spec->hw.channels;
    /* NCCL's graph bandwidth, nChannels x bw (the tree's cap): the bus
     * bandwidth the ring reaches on the same channels */
    double graph = INFINITY, R;
    if (algo == COLL_TREE && N >= 2) {
        if (coll_cost_algbw(spec, nw, v, COLL_RING, &R))
            return ps_errf(err, "out of memory");
        graph = R * coll_busbw_factor(spec->op, N);
    }
    double cap = coll_proto_cap(spec, algo, proto, nodes, ch, graph);
    if (N < 2 || isinf(cap))
        return PS_OK;
    /* the cap as algorithm bandwidth: NCCL's busBw x nRanks / nsteps for
     * the ring, x .5 for the tree (tuning.cc, "Convert bus BW to algorithm
     * BW") */
    double acap =
        algo == COLL_TREE ? cap * .5 : cap / coll_busbw_factor(spec->op, N);
    double A;
    if (coll_cost_algbw(spec, nw, v, algo, &A))
        return ps_errf(err, "out of memory");
    if (isfinite(A) && A / acap > *wire)
        *wire = A / acap;
    return PS_OK;
}

int coll_cost_predict_proto(const coll_spec *spec, const net *nw,
                            const coll_view *v, int algo, int proto,
                            double *seconds, int32_t *chunks, ps_err *err)
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
    double w;
    coll_spec one = *spec; /* the protocol costed (NCCL's tree chunks) */
    one.protocol = proto;
    int rc = coll_cost_wire(spec, nw, v, algo, proto, &w, err);
    if (rc == PS_OK)
        rc = coll_cost_predict(&one, nw, v, algo, (double)spec->bytes * w,
                               seconds, chunks, err);
    if (rc == PS_OK && spec->bytes > 0)
        *seconds += coll_proto_overhead(spec, v->N, algo, proto,
                                        coll_ring_channels(spec, nw, v));
    return rc;
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

/* The time auto ranks (algo, proto) by, given its prediction t: t, but for
 * NCCL's tree allreduce at least NCCL's tuner formula with the tree's
 * correction (ncclTopoGetAlgoTime, tuning.cc, NCCL 2.30.7: latency +
 * bytes / (bandwidth x treeCorrectionFactor)), on pipesim's latency (the
 * prediction at 4 bytes) and steady-state bandwidth (coll_cost_algbw over
 * the protocol's wire factor). Why: auto predicts what NCCL picks, and
 * NCCL picks by that formula; the factor stands for the real tree's
 * losses at medium sizes, of which the pipeline's fill and drain, which
 * the prediction t simulates, is one, so the larger of the two is taken,
 * never their sum (the fill is not counted twice). The prediction (and
 * the simulated time) stay the physical ones. Returns 0, or -1 when out
 * of memory. */
static int tuner_rank(const coll_spec *spec, const net *nw, const coll_view *v,
                      int algo, int proto, double t, double *rank)
{
    *rank = t;
    double cf = coll_proto_tree_correction(proto, spec->bytes);
    if (algo != COLL_TREE || spec->op != COLL_ALLREDUCE || cf >= 1)
        return 0;
    double w, A, lat;
    int32_t k;
    coll_spec tiny = *spec;
    tiny.bytes = 4;
    if (coll_cost_wire(spec, nw, v, algo, proto, &w, NULL) ||
        coll_cost_algbw(spec, nw, v, algo, &A) ||
        coll_cost_predict_proto(&tiny, nw, v, algo, proto, &lat, &k, NULL))
        return -1;
    if (isfinite(A) && A > 0)
        *rank = fmax(t, lat + (double)spec->bytes * w / (cf * A));
    return 0;
}

int coll_cost_choose(const coll_spec *spec, const net *nw, const coll_view *v,
                     int *algo, int *proto, double *pred, int32_t *chunks,
                     ps_err *err)
{
    int want = *proto;
    double best = INFINITY, r;
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
        for (int p = p0; p <= p1; p++) {
            double t;
            int32_t k;
            if (coll_cost_predict_proto(spec, nw, v, *a, p, &t, &k, NULL))
                continue; /* does not apply here (hierarchical without
                             nodes) */
            if (tuner_rank(spec, nw, v, *a, p, t, &r))
                return ps_errf(err, "out of memory");
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
