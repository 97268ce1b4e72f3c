/* Internal to the coll module: what the driver (coll/coll.c), the cost models
 * (coll/cost.c), the data check (coll/verify.c) and the names and checks
 * below them (coll/names.c, coll/spec.c, coll/flows.c) share. Positions
 * 0 .. N-1 index the collective's listed ranks. */
#ifndef PS_COLL_INT_H
#define PS_COLL_INT_H

#include <stdint.h>

#include "coll/algo.h"
#include "coll/coll.h"

/* Op names, and algorithms per op in the order they are listed and tried
 * by auto (ties go to the earlier one), each list ending in -1. */
extern const char *const coll_op_names_[COLL_NOPS];
#define COLL_MAX_OP_ALGOS 10
extern const int coll_op_algos_[COLL_NOPS][COLL_MAX_OP_ALGOS];
/* "ring, tree, ..., auto": the algorithms of op into buf, for messages
 * (coll/names.c). */
void coll_list_algos(enum coll_op op, char *buf, size_t size);

/* A checked view of the spec: positions, root position, element count. */
typedef struct coll_view {
    const int32_t *rank; /* position -> cluster rank */
    int32_t *owned;      /* identity list when spec->ranks is NULL */
    int32_t N;
    int32_t root; /* position */
    int64_t n;    /* elements */
} coll_view;

/* Checks spec against nw and fills *v (release with coll_view_free, also
 * after a failure; coll/spec.c). Fails naming the field and the value. */
int coll_check_spec(const coll_spec *spec, const net *nw, coll_view *v,
                    ps_err *err);
void coll_view_free(coll_view *v);

/* The slots algo runs with for spec on nw: spec's for the ring and, off a
 * mesh, NCCL's tree, 0 = the default; else 1 (auto may pick an algorithm
 * that runs step by step; the tree on a mesh is the textbook closed form,
 * coll/cost.c). */
static inline int32_t coll_slots(const coll_spec *spec, const net *nw, int algo)
{
    if (algo != COLL_RING && (algo != COLL_TREE || net_is_mesh(nw)))
        return 1;
    return spec->slots ? spec->slots : coll_default_slots(algo);
}

/* Floats per rank in the data-mode buffer: the array, and for the ops
 * that are out of place (alltoall, sendrecv) a receive buffer after it. */
static inline int64_t coll_stride(enum coll_op op, int64_t n)
{
    return op == COLL_ALLTOALL || op == COLL_SENDRECV ? 2 * n : n;
}

/* Chunk counts the cost model may pick for the chunked algorithms: NCCL's
 * chunks are hundreds of KB, so a bound keeps programs small for huge
 * messages without changing the optimum at realistic sizes. */
#define COLL_MAX_CHUNKS 256

/* Alpha-beta of nf flows that run at once: each flow's route latency and
 * its share of its narrowest link (coll/flows.c). Returns 0, or -1 when out
 * of memory. */
int coll_flows_ab(const net *nw, const int32_t *src, const int32_t *dst,
                  int64_t nf, double *lat, double *bw);

/* NCCL's tree chunk (coll/tree.c): the payload bytes per chunk NCCL's
 * allreduce tree runs with under proto (none: Simple's) on nodes x ppn
 * ranks for a channel of `bytes`; the chunk count of each tree of each of
 * C channels for spec (at least 1, at most COLL_MAX_CHUNKS and the
 * elements); the time of the pipelined tree on nodes of rpn with C
 * channels moving T wire bytes in k chunks with `slots` per connection. */
double coll_tree_chunk(int proto, int32_t nodes, int32_t ppn, double bytes);
int32_t coll_tree_chunks(const coll_spec *spec, int proto, int32_t N, int32_t C,
                         int64_t n);
int coll_tree_pipe_cost(const net *nw, const coll_view *v, int32_t rpn,
                        int32_t C, double T, int32_t k, int32_t slots,
                        double *t);

/* Ring channels (rings side by side) for spec on nw; NCCL's graph across nodes
 * (coll/graph.c). */
int32_t coll_ring_channels(const coll_spec *spec, const net *nw,
                           const coll_view *v);

/* The cost model of algo for a checked spec moving `bytes` on the wire
 * (coll/cost.c; spec->bytes times the protocol's wire factor); err may be
 * NULL. Fails when algo does not apply. */
int coll_cost_predict(const coll_spec *spec, const net *nw, const coll_view *v,
                      int algo, double bytes, double *seconds, int32_t *chunks,
                      ps_err *err);

/* The algorithm bandwidth ring or NCCL's tree reaches at large sizes at
 * one wire byte per payload byte (coll/cost.c), into *A. Returns 0, or -1
 * when out of memory. */
int coll_cost_algbw(const coll_spec *spec, const net *nw, const coll_view *v,
                    int algo, double *A);

/* The wire factor (bytes on the wire per payload byte) algo runs with
 * under proto: the protocol's (coll_wire), raised where NCCL's cap on the
 * protocol's bandwidth (coll_proto_cap) is below what the network gives
 * the algorithm at large sizes, so that the simulated bandwidth is the
 * cap (coll/choose.c). Fails only when out of memory. */
int coll_cost_wire(const coll_spec *spec, const net *nw, const coll_view *v,
                   int algo, int proto, double *wire, ps_err *err);

/* The cost model of (algo, proto): coll_cost_predict on the protocol's
 * wire bytes (coll_cost_wire) plus its fixed latency
 * (coll_proto_overhead). */
int coll_cost_predict_proto(const coll_spec *spec, const net *nw,
                            const coll_view *v, int algo, int proto,
                            double *seconds, int32_t *chunks, ps_err *err);

/* auto: the candidate (algorithm, protocol) with the lowest predicted time
 * (ties: list order, protocols LL, LL128, Simple). *proto is in and out:
 * COLL_PROTO_AUTO tries each protocol of the algorithms that have them
 * (others are not candidates), a protocol is tried with those algorithms
 * only, COLL_PROTO_NONE keeps today's candidates. */
int coll_cost_choose(const coll_spec *spec, const net *nw, const coll_view *v,
                     int *algo, int *proto, double *pred, int32_t *chunks,
                     ps_err *err);

/* 1 when nvls can run spec's N ranks: the cluster has NVLS and they are
 * one whole node. */
int coll_nvls_applies(const coll_spec *spec, int32_t N);

/* Protocols (coll/proto.c): NCCL's bandwidth efficiency of (algo, proto)
 * on `nodes` nodes; the wire factor of algo with proto on N ranks (1 /
 * efficiency; nvls: its traffic on the direct pattern); the cap on the bus
 * bandwidth (B/s, INFINITY none) with NCCL's `channels` and its graph's
 * bus bandwidth `graph` (B/s, INFINITY unknown); nodes NCCL's
 * model sees (N / ranks_per_node, or N); the latency a protocol adds to a
 * simulated collective; NCCL's own latency prediction. Seconds. */
double coll_proto_eff(int algo, int proto, int32_t nodes);
double coll_wire(const coll_spec *spec, int algo, int proto, int32_t N);
double coll_proto_cap(const coll_spec *spec, int algo, int proto, int32_t nodes,
                      int32_t channels, double graph);
int32_t coll_proto_nodes(const coll_spec *spec, int32_t N);
/* channels: NCCL's search's (coll_ring_channels across nodes; the
 * ring's plateau). */
double coll_proto_overhead(const coll_spec *spec, int32_t N, int algo,
                           int proto, int32_t channels);
double coll_proto_nccl_latency(const coll_spec *spec, int32_t N, int algo,
                               int proto);
/* NCCL's correction of the tree's bandwidth for an allreduce of `bytes`
 * under proto (treeCorrectionFactor, tuning.cc): 0.4 to 1.0; 1 without a
 * protocol. */
double coll_proto_tree_correction(int proto, int64_t bytes);

/* Data mode's inputs of position i into b (coll_stride floats): its
 * elements where it holds them, NaN elsewhere (coll/verify.c). */
void coll_data_inputs(const coll_spec *spec, const coll_view *v, int32_t i,
                      float *b);

/* Data mode: fills the inputs into buf (N x n), replays g's recorded
 * transfers, checks every rank's result and points res's outputs into buf
 * (res->store_ owns it). Fails with the first wrong element. */
int coll_verify_run(const coll_spec *spec, const coll_view *v, coll_gen *g,
                    float *buf, coll_result *res, ps_err *err);

#endif
