/* Collectives: op and algorithm names, the checks of a spec, and the run
 * driver (auto's pick, the counting pass, program generation, the engine
 * run). Cost models and `auto` live in coll/cost.c, the data-mode replay and
 * check in coll/verify.c, the algorithm generators in coll/algo.c. */
#include "coll/coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "coll/algo.h"
#include "coll/gen_coll.h"
#include "coll/impl.h"

const char *const coll_op_names_[COLL_NOPS] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast",
    "reduce",    "alltoall",       "sendrecv"};

static const char *const algo_names[COLL_NALGOS] = {"ring",
                                                    "tree",
                                                    "double_binary_tree",
                                                    "halving_doubling",
                                                    "direct",
                                                    "hierarchical",
                                                    "pipeline",
                                                    "scatter_allgather",
                                                    "pairwise",
                                                    "binomial_tree",
                                                    "nvls"};

/* Algorithms per op, in the order they are listed and tried by auto (ties
 * go to the earlier one). */
const int coll_op_algos_[COLL_NOPS][COLL_MAX_OP_ALGOS] = {
    [COLL_ALLREDUCE] = {COLL_RING, COLL_TREE, COLL_BINOMIAL_TREE,
                        COLL_DOUBLE_BINARY_TREE, COLL_HALVING_DOUBLING,
                        COLL_DIRECT, COLL_HIERARCHICAL, COLL_NVLS, -1},
    [COLL_REDUCE_SCATTER] = {COLL_RING, COLL_HALVING_DOUBLING, COLL_DIRECT, -1},
    [COLL_ALLGATHER] = {COLL_RING, COLL_HALVING_DOUBLING, COLL_DIRECT, -1},
    [COLL_BROADCAST] = {COLL_BINOMIAL_TREE, COLL_PIPELINE,
                        COLL_SCATTER_ALLGATHER, -1},
    [COLL_REDUCE] = {COLL_BINOMIAL_TREE, -1},
    [COLL_ALLTOALL] = {COLL_DIRECT, COLL_PAIRWISE, -1},
    [COLL_SENDRECV] = {COLL_DIRECT, -1},
};

const char *coll_op_name(enum coll_op op)
{
    return (unsigned)op < COLL_NOPS ? coll_op_names_[op] : "?";
}

const char *coll_algo_name(int algo)
{
    if (algo == COLL_AUTO)
        return "auto";
    return algo >= 0 && algo < COLL_NALGOS ? algo_names[algo] : "?";
}

int coll_algo_applies(enum coll_op op, int algo)
{
    if ((unsigned)op >= COLL_NOPS)
        return 0;
    for (const int *a = coll_op_algos_[op]; *a >= 0; a++)
        if (*a == algo)
            return 1;
    return 0;
}

double coll_busbw_factor(enum coll_op op, int32_t n)
{
    switch (op) {
    case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COLL_REDUCE_SCATTER:
    case COLL_ALLGATHER:
    case COLL_ALLTOALL: return (double)(n - 1) / n;
    default: return 1;
    }
}

/* nccl-tests' binary names (all_reduce_perf, ...) without "_perf". */
static const char *const nccl_tests_names[COLL_NOPS] = {
    "all_reduce", "reduce_scatter", "all_gather", "broadcast",
    "reduce",     "alltoall",       "sendrecv"};

int coll_parse_op(const char *name, enum coll_op *op, ps_err *err)
{
    for (int i = 0; i < COLL_NOPS; i++)
        if (name && (strcmp(name, coll_op_names_[i]) == 0 ||
                     strcmp(name, nccl_tests_names[i]) == 0)) {
            *op = (enum coll_op)i;
            return PS_OK;
        }
    return ps_errf(err,
                   "unknown collective op '%s' (expected allreduce, "
                   "reduce_scatter, allgather, broadcast, reduce, alltoall, "
                   "sendrecv)",
                   name ? name : "");
}

int32_t coll_default_slots(int algo)
{
    /* the pipelined model is NCCL's (its ring and tree); the other
     * generators are textbook algorithms that run step by step */
    return algo == COLL_RING || algo == COLL_TREE ? COLL_NCCL_STEPS : 1;
}

/* "ring, tree, ..., auto" for op into buf. */
static void list_algos(enum coll_op op, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (const int *a = coll_op_algos_[op]; *a >= 0 && len < size; a++)
        len += (size_t)snprintf(buf + len, size - len, "%s, ", algo_names[*a]);
    if (len < size)
        snprintf(buf + len, size - len, "auto");
}

int coll_parse_algo(enum coll_op op, const char *name, int *algo, ps_err *err)
{
    if ((unsigned)op >= COLL_NOPS)
        return ps_errf(err, "unknown collective op %d", (int)op);
    if (name && strcmp(name, "auto") == 0) {
        *algo = COLL_AUTO;
        return PS_OK;
    }
    for (const int *a = coll_op_algos_[op]; *a >= 0; a++)
        if (name && strcmp(name, algo_names[*a]) == 0) {
            *algo = *a;
            return PS_OK;
        }
    char list[256];
    list_algos(op, list, sizeof list);
    return ps_errf(err, "unknown %s algorithm '%s' (expected %s)",
                   coll_op_names_[op], name ? name : "", list);
}

/* ------------------------------------------------------------------ */
/* Input checks                                                        */

/* NVLS needs the ranks on one node's switch (NCCL uses it across nodes
 * only with CollNet) and more than 2 of them: NCCL's ncclNvlsInit
 * (src/transport/nvls.cc) returns without NVLS when the communicator has
 * gpuCount <= 2 GPUs. A subset of a node (a data-parallel group under
 * tensor parallelism, a TP group) qualifies. */
int coll_nvls_applies(const coll_spec *spec, int32_t N)
{
    return spec->hw.nvls && N > 2 && spec->ranks_per_node == N;
}

/* Why nvls cannot run spec (the message), or 0. */
static int err_nvls(const coll_spec *spec, int32_t N, ps_err *err)
{
    if (!spec->hw.nvls)
        return ps_errf(err,
                       "allreduce: algorithm 'nvls' needs NVSwitches with "
                       "NVLink SHARP (a cluster with nvls = true, such as "
                       "ps.clusters.dgx(\"h100\")); this cluster has none");
    if (!coll_nvls_applies(spec, N))
        return ps_errf(err,
                       "allreduce: algorithm 'nvls' runs on 3 or more GPUs "
                       "of one node (NCCL needs more than 2, and uses NVLS "
                       "across nodes only with CollNet); %d ranks are not "
                       "that",
                       (int)N);
    if (spec->protocol == COLL_LL || spec->protocol == COLL_LL128)
        return ps_errf(err,
                       "allreduce: nvls runs with the simple protocol only, "
                       "got '%s'",
                       coll_proto_name(spec->protocol));
    return 0;
}

int coll_check_spec(const coll_spec *spec, const net *nw, coll_view *v,
                    ps_err *err)
{
    memset(v, 0, sizeof *v);
    int32_t C = net_ranks(nw);
    if ((unsigned)spec->op >= COLL_NOPS)
        return ps_errf(err, "unknown collective op %d", (int)spec->op);
    const char *opn = coll_op_names_[spec->op];
    if (spec->algorithm != COLL_AUTO &&
        !coll_algo_applies(spec->op, spec->algorithm)) {
        char list[256];
        list_algos(spec->op, list, sizeof list);
        return ps_errf(err, "%s has no algorithm '%s' (expected %s)", opn,
                       coll_algo_name(spec->algorithm), list);
    }
    if (spec->bytes < 0)
        return ps_errf(err, "%s: bytes must be zero or positive, got %lld", opn,
                       (long long)spec->bytes);
    if (spec->bytes % 4)
        return ps_errf(err,
                       "%s: bytes must be a multiple of 4 (float32 "
                       "elements), got %lld",
                       opn, (long long)spec->bytes);
    if (spec->ranks) {
        if (spec->nranks < 1)
            return ps_errf(err, "%s: no ranks", opn);
        v->rank = spec->ranks;
        v->N = spec->nranks;
    } else {
        v->owned = malloc(((size_t)C + 1) * sizeof *v->owned);
        if (!v->owned)
            return ps_errf(err, "out of memory");
        for (int32_t i = 0; i < C; i++)
            v->owned[i] = i;
        v->rank = v->owned;
        v->N = C;
    }
    char *seen = calloc((size_t)C + 1, 1);
    if (!seen)
        return ps_errf(err, "out of memory");
    int rc = PS_OK;
    v->root = -1;
    for (int32_t i = 0; i < v->N && rc == PS_OK; i++) {
        int32_t r = v->rank[i];
        if (r < 0 || r >= C)
            rc = ps_errf(err, "%s: rank %d is not in the cluster (ranks 0..%d)",
                         opn, (int)r, (int)C - 1);
        else if (seen[r]++)
            rc = ps_errf(err, "%s: rank %d is listed twice", opn, (int)r);
        else if (r == spec->root)
            v->root = i;
    }
    free(seen);
    if (rc)
        return rc;
    int rooted = spec->op == COLL_BROADCAST || spec->op == COLL_REDUCE;
    if (rooted && v->root < 0)
        return ps_errf(err, "%s: root %d is not among the ranks", opn,
                       (int)spec->root);
    if (!rooted)
        v->root = 0;
    if (spec->ranks_per_node < 0)
        return ps_errf(err, "%s: ranks_per_node must be positive, got %d", opn,
                       (int)spec->ranks_per_node);
    if (spec->chunks < 0)
        return ps_errf(err, "%s: chunks must be positive, got %d", opn,
                       (int)spec->chunks);
    if (spec->op == COLL_ALLTOALL && spec->bytes % (4 * (int64_t)v->N))
        return ps_errf(err,
                       "alltoall: bytes must split into %d equal blocks of "
                       "float32 elements (a multiple of %lld), got %lld",
                       (int)v->N, 4 * (long long)v->N, (long long)spec->bytes);
    if (spec->protocol < COLL_PROTO_AUTO || spec->protocol >= COLL_NPROTOS)
        return ps_errf(err, "%s: unknown protocol %d", opn, spec->protocol);
    if (spec->protocol != COLL_PROTO_NONE && spec->algorithm != COLL_AUTO &&
        !coll_algo_has_proto(spec->algorithm))
        return ps_errf(err,
                       "%s: protocol '%s' applies to ring, tree and nvls "
                       "(NCCL's algorithms), not %s",
                       opn, coll_proto_name(spec->protocol),
                       coll_algo_name(spec->algorithm));
    if (spec->algorithm == COLL_NVLS && (err_nvls(spec, v->N, err)))
        return PS_ERR;
    if (spec->slots < 0 || spec->slots > COLL_NCCL_STEPS)
        return ps_errf(err, "%s: slots must be 1 to %d, got %d", opn,
                       COLL_NCCL_STEPS, (int)spec->slots);
    if (spec->slots > 1 && spec->algorithm != COLL_AUTO &&
        spec->algorithm != COLL_RING &&
        (spec->algorithm != COLL_TREE || net_is_mesh(nw)))
        return ps_errf(err,
                       "%s: slots = %d applies to ring, and to tree off a "
                       "mesh (%s runs step by step%s: slots = 1)",
                       opn, (int)spec->slots, coll_algo_name(spec->algorithm),
                       spec->algorithm == COLL_TREE ? " on a mesh" : "");
    v->n = spec->bytes / 4;
    return PS_OK;
}

void coll_view_free(coll_view *v)
{
    free(v->owned);
    v->owned = NULL;
}

/* ------------------------------------------------------------------ */
/* The run                                                             */

/* Counting pass: runs the generator without emitting to learn each
 * position's op and send counts, reserves every lane exactly (no realloc
 * while generating) and hands each sender a contiguous block of message
 * ids. O(transfers) with no memory traffic beyond two counters each. */
static int reserve(coll_gen *g, enum coll_op op, int algo, int32_t root,
                   int32_t rpn, int32_t chunks)
{
    int32_t N = g->N, nl = g->N * g->chan_lanes;
    g->ops = calloc((size_t)nl, sizeof *g->ops);
    g->next_msg = calloc((size_t)N, sizeof *g->next_msg);
    if (!g->ops || !g->next_msg)
        return -1;
    g->counting = 1;
    coll_generate(g, op, algo, root, rpn, chunks);
    g->counting = 0;
    g->nsteps = 0;
    if (g->oom)
        return -1;
    int64_t base = g->ps->nmsgs;
    for (int32_t i = 0; i < N; i++) {
        int64_t sends = g->next_msg[i];
        g->next_msg[i] = (int32_t)base;
        base += sends;
    }
    if (g->append) {
        /* lanes that already hold a training step's ops grow in place */
        for (int32_t i = 0; i < nl; i++)
            if (prog_grow(g->ps, g->lane[i], g->ops[i]))
                return -1;
    } else {
        int64_t *count = calloc((size_t)g->ps->nlanes + 1, sizeof *count);
        if (!count)
            return -1;
        for (int32_t i = 0; i < nl; i++)
            count[g->lane[i]] = g->ops[i];
        int rc = prog_reserve(g->ps, count);
        free(count);
        if (rc)
            return -1;
    }
    if (base > INT32_MAX)
        return -1;
    g->ps->nmsgs = (int32_t)base; /* the ids handed out above */
    return 0;
}

void coll_result_free(coll_result *res)
{
    if (!res)
        return;
    free(res->bytes_sent);
    free(res->outputs);
    free(res->out_count);
    free(res->store_);
    free(res->moves);
    res->moves = NULL;
    res->nmoves = 0;
    res->bytes_sent = NULL;
    res->outputs = NULL;
    res->out_count = NULL;
    res->store_ = NULL;
}

/* The algorithm and protocol to run (spec's, or auto's choice), its
 * prediction and its chunk count, for a checked spec. */
static int choice_of(const coll_spec *spec, const net *nw, const coll_view *v,
                     int *algo, int *proto, double *pred, int32_t *chunks,
                     ps_err *err)
{
    *algo = spec->algorithm;
    *proto = spec->protocol;
    *chunks = 1;
    *pred = 0;
    if (*algo == COLL_AUTO)
        return coll_cost_choose(spec, nw, v, algo, proto, pred, chunks, err);
    if (*algo == COLL_NVLS) /* its one protocol */
        *proto = COLL_SIMPLE;
    if (*proto == COLL_PROTO_AUTO) { /* the algorithm's best protocol */
        coll_spec one = *spec;
        one.candidates = 1u << *algo;
        return coll_cost_choose(&one, nw, v, algo, proto, pred, chunks, err);
    }
    return coll_cost_predict_proto(spec, nw, v, *algo, *proto, pred, chunks,
                                   err);
}

/* Checks spec into *v (coll_check_spec), then the algorithm and protocol
 * to run (spec's, or auto's choice), its prediction and its chunk count.
 * On failure *v holds nothing (coll_view_free may still be called). */
static int pick(const coll_spec *spec, const net *nw, coll_view *v, int *algo,
                int *proto, double *pred, int32_t *chunks, ps_err *err)
{
    int rc = coll_check_spec(spec, nw, v, err);
    if (rc == PS_OK)
        rc = choice_of(spec, nw, v, algo, proto, pred, chunks, err);
    if (rc)
        coll_view_free(v);
    return rc;
}

/* The channel count (ring and NCCL's tree: NCCL's graph channels on whole
 * nodes, coll_ring_channels), the slots and the lanes per position of algo. A
 * pipelined ring of several channels runs each channel in a lane of its
 * own on every rank, as NCCL runs each channel in its own thread block:
 * in one lane a rank would wait in every step for all its channels'
 * receives, one of which crosses the node boundary, and the channels'
 * latencies would add up step by step again. Inside a training step
 * (coll_append) these lanes are forked from the rank's lane. */
static void plan(coll_gen *g, const coll_spec *spec, const net *nw,
                 const coll_view *v, int algo, int own_lanes)
{
    g->channels = algo == COLL_RING || algo == COLL_TREE
                      ? coll_ring_channels(spec, nw, v)
                      : 1;
    g->slots = coll_slots(spec, nw, algo);
    g->chan_lanes = own_lanes && g->slots > 1 ? g->channels : 1;
    if (algo == COLL_TREE && own_lanes && g->slots > 1)
        g->chan_lanes = 4 * g->channels; /* up and down lanes of both trees */
    g->chan = 0;
    g->chan_to = -1;
}

/* Emits algo into g's lanes (set up by the caller after plan): the
 * counting pass that reserves room, then the ops. -1 when out of memory. */
static int emit(coll_gen *g, const coll_spec *spec, const coll_view *v,
                int algo, int32_t chunks)
{
    if (!g->oom &&
        reserve(g, spec->op, algo, v->root, spec->ranks_per_node, chunks))
        g->oom = 1;
    if (!g->oom)
        coll_generate(g, spec->op, algo, v->root, spec->ranks_per_node, chunks);
    return g->oom ? -1 : 0;
}

static void gen_free(coll_gen *g)
{
    free(g->lane);
    free(g->last_step);
    free(g->x);
    free(g->ops);
    free(g->next_msg);
}

/* Data mode's buffers (out of place: a send and a receive buffer per
 * rank) into *buf; none without data mode. Refuses a size whose buffers
 * would not be reasonable to hold. */
static int data_buffer(const coll_spec *spec, const coll_view *v, float **buf,
                       ps_err *err)
{
    *buf = NULL;
    if (spec->data == COLL_DATA_NONE)
        return PS_OK;
    if (spec->data == COLL_DATA_FN && !spec->data_fn)
        return ps_errf(err, "%s: data mode without a data function",
                       coll_op_names_[spec->op]);
    int64_t stride = coll_stride(spec->op, v->n);
    if ((double)v->N * (double)stride > COLL_DATA_MAX_FLOATS)
        return ps_errf(err,
                       "%s: data mode would hold %d x %lld floats; use a "
                       "smaller size",
                       coll_op_names_[spec->op], (int)v->N, (long long)v->n);
    *buf = malloc(((size_t)v->N * (size_t)stride + 1) * sizeof **buf);
    if (!*buf)
        return ps_errf(err, "out of memory for data mode");
    return PS_OK;
}

/* The lanes a standalone collective runs: chan_lanes per rank on fresh
 * lanes of ps (set up after plan), and the per-rank byte counters. */
static int own_lanes(coll_gen *g, const coll_view *v, const net *nw,
                     prog_set *ps, coll_result *res, ps_err *err)
{
    size_t nl = (size_t)v->N * (size_t)g->chan_lanes;
    res->bytes_sent = calloc((size_t)v->N, sizeof *res->bytes_sent);
    g->lane = malloc(nl * sizeof *g->lane);
    g->last_step = malloc(nl * sizeof *g->last_step);
    if (!res->bytes_sent || !g->lane || !g->last_step)
        return ps_errf(err, "out of memory");
    prog_reset(ps, net_ranks(nw));
    g->ps = ps;
    g->rank = v->rank;
    g->N = v->N;
    g->n = v->n;
    g->sent = res->bytes_sent;
    for (size_t i = 0; i < nl; i++) {
        g->lane[i] = prog_add_lane(ps, v->rank[i % (size_t)v->N]);
        g->last_step[i] = -1;
        if (g->lane[i] < 0)
            g->oom = 1;
    }
    return PS_OK;
}

/* Runs the collective in eng: streamed by its generator when one applies
 * (no programs in ps: the lanes own_lanes added stay empty; the generator
 * moves the payload alone, so a protocol's wire bytes need the programs),
 * else as sealed programs, with the spec's faults. */
static int execute(coll_gen *g, const coll_spec *spec, const coll_view *v,
                   int algo, int32_t chunks, net *nw, eng_sim *eng,
                   prog_set *ps, int data, coll_result *res, eng_result *er,
                   ps_err *err)
{
    if (spec->stream && !data && !spec->faults && g->wire == 1.0 &&
        gen_coll_applies(spec->op, algo, g->channels, v->N, v->n))
        return gen_coll_run(spec->op, algo, v->rank, v->N, v->n, g->slots,
                            spec->p2p, nw, eng, er, res->bytes_sent,
                            &g->transfers, &g->nsteps, err);
    if (emit(g, spec, v, algo, chunks))
        return ps_errf(err, "out of memory generating the programs");
    if (prog_seal(ps, err))
        return PS_ERR;
    eng_set_faults(eng, spec->faults);
    int rc = eng_run(eng, ps, nw, spec->p2p, er, err);
    eng_set_faults(eng, NULL);
    return rc;
}

/* Data mode's results: each rank's output (res takes buf), checked
 * against the operation's closed form, and what each message moved, for
 * live mode (coll/live.c). */
static int keep_outputs(const coll_spec *spec, const coll_view *v, coll_gen *g,
                        const prog_set *ps, float *buf, coll_result *res,
                        ps_err *err)
{
    res->outputs = calloc((size_t)v->N, sizeof *res->outputs);
    res->out_count = calloc((size_t)v->N, sizeof *res->out_count);
    if (!res->outputs || !res->out_count) {
        free(buf);
        return ps_errf(err, "out of memory");
    }
    res->store_ = buf;
    if (coll_verify_run(spec, v, g, res->store_, res, err))
        return PS_ERR;
    res->moves = calloc((size_t)ps->nmsgs + 1, sizeof *res->moves);
    if (!res->moves)
        return ps_errf(err, "out of memory");
    res->nmoves = ps->nmsgs;
    for (int64_t k = 0; k < g->nx; k++)
        res->moves[g->x[k].msg] =
            (coll_move){g->x[k].lo, g->x[k].cnt, g->x[k].dlo, g->x[k].add};
    return PS_OK;
}

int coll_run(const coll_spec *spec, net *nw, eng_sim *eng, prog_set *ps,
             coll_result *res, ps_err *err)
{
    memset(res, 0, sizeof *res);
    coll_view v;
    coll_gen g;
    memset(&g, 0, sizeof g);
    float *buf = NULL;
    int algo, proto;
    int32_t chunks;
    double pred;
    eng_result er;
    int rc = pick(spec, nw, &v, &algo, &proto, &pred, &chunks, err);
    if (rc)
        goto fail;
    int32_t N = v.N;
    if ((rc = data_buffer(spec, &v, &buf, err)))
        goto fail;
    plan(&g, spec, nw, &v, algo, 1);
    if ((rc = coll_cost_wire(spec, nw, &v, algo, proto, &g.wire, err)) ||
        (rc = own_lanes(&g, &v, nw, ps, res, err)))
        goto fail;
    g.record = buf != NULL;
    if ((rc = execute(&g, spec, &v, algo, chunks, nw, eng, ps, buf != NULL, res,
                      &er, err)))
        goto fail;
    res->algorithm = algo;
    res->protocol = proto;
    res->chunks = chunks;
    res->channels = g.channels;
    res->slots = g.slots;
    res->predicted = pred;
    /* the protocol's fixed latency (coll/proto.c) is not simulated: it is
     * added to the makespan in closed form */
    res->time =
        er.makespan +
        (spec->bytes > 0 ? coll_proto_overhead(spec, N, algo, proto, g.channels)
                         : 0);
    res->nranks = N;
    res->transfers = g.transfers;
    res->steps = g.nsteps;
    res->algbw = res->time > 0 ? (double)spec->bytes / res->time : 0;
    res->busbw = res->algbw * coll_busbw_factor(spec->op, N);
    if (buf) {
        float *keep = buf;
        buf = NULL; /* keep_outputs owns it */
        if ((rc = keep_outputs(spec, &v, &g, ps, keep, res, err)))
            goto fail;
    }
    gen_free(&g);
    coll_view_free(&v);
    return PS_OK;
fail:
    free(buf);
    gen_free(&g);
    coll_view_free(&v);
    coll_result_free(res);
    return rc;
}

int coll_choose(const coll_spec *spec, const net *nw, coll_result *res,
                ps_err *err)
{
    memset(res, 0, sizeof *res);
    coll_view v;
    coll_gen g;
    memset(&g, 0, sizeof g);
    int algo, proto;
    int32_t chunks;
    double pred;
    int rc = pick(spec, nw, &v, &algo, &proto, &pred, &chunks, err);
    if (rc == PS_OK) {
        plan(&g, spec, nw, &v, algo, 1);
        res->algorithm = algo;
        res->protocol = proto;
        res->chunks = chunks;
        res->channels = g.channels;
        res->slots = g.slots;
        res->predicted = pred;
        res->nranks = v.N;
    }
    coll_view_free(&v);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Appending to existing programs (gradient sync inside a training step) */

void coll_forks_free(coll_forks *f)
{
    for (size_t i = 0; i < f->cap; i++)
        free(f->lane[i]);
    free(f->n);
    free(f->lane);
    f->n = NULL;
    f->lane = NULL;
    f->cap = 0;
}

/* Fork x of owner lane l (on rank), from forks or a new lane of ps;
 * -1 when out of memory. */
static int32_t fork_lane(prog_set *ps, coll_forks *forks, int32_t l,
                         int32_t rank, int32_t x)
{
    if (!forks)
        return prog_add_lane(ps, rank);
    if ((size_t)l >= forks->cap) { /* both grow alike, new entries zero */
        size_t cap_n = forks->cap, cap_lane = forks->cap;
        if (VEC_RESERVE(forks->n, cap_n, (size_t)l + 1) ||
            VEC_RESERVE(forks->lane, cap_lane, (size_t)l + 1))
            return -1;
        forks->cap = cap_n;
    }
    /* a lane's forks: a handful (its channel lanes), grown exactly */
    if (x < forks->n[l])
        return forks->lane[l][x];
    int32_t *a = realloc(forks->lane[l], (size_t)(x + 1) * sizeof *a);
    if (!a)
        return -1;
    forks->lane[l] = a;
    a[x] = prog_add_lane(ps, rank);
    if (a[x] >= 0)
        forks->n[l] = x + 1;
    return a[x];
}

/* The moves of g's transfers into log, by message id (ids below nmsgs). */
static int note_moves(coll_move_log *log, const coll_gen *g, int32_t nmsgs)
{
    size_t cap = (size_t)log->cap; /* int64_t: step/pipe_live.c reads it */
    if (VEC_RESERVE(log->m, cap, nmsgs)) /* zero where none moved */
        return -1;
    log->cap = (int64_t)cap;
    for (int64_t k = 0; k < g->nx; k++)
        log->m[g->x[k].msg] =
            (coll_move){g->x[k].lo, g->x[k].cnt, g->x[k].dlo, g->x[k].add};
    return 0;
}

/* The protocol's fixed latency (coll_proto_overhead: NCCL's base latency
 * and the per-step excess of its hop latency over the links'; nvls's 25
 * us), which coll_run adds in closed form: here a delay at the head of
 * every rank's share, which holds the communication lane and leaves the
 * device to compute, so a bucket costs inside a step what the same
 * collective costs alone. 0 without a protocol. Notes where each rank's
 * share starts (from[nl + i]). */
static void head_delay(coll_gen *g, prog_set *ps, const int32_t *lanes,
                       double over, int32_t *from, size_t nl)
{
    for (int32_t i = 0; i < g->N && !g->oom; i++) {
        from[nl + (size_t)i] = ps->lanes[lanes[i]].n;
        prog_op d = prog_delay(PROG_COLL, -1, over);
        if (over > 0 && prog_push(ps, lanes[i], &d))
            g->oom = 1;
    }
}

/* The lanes g's ops go on. With lanes of its own (chan_lanes > 1) the
 * collective forks (coll/coll.h): signals are instant (sim/eng.c), and each
 * fork's start signal wakes that fork alone, in slot order, as coll_run's
 * lanes start, so the forks run what coll_run's lanes run from the moment
 * the rank's lane gets there, and a collective whose ranks all arrive at
 * once takes its standalone time (tests/cli.sh 'grad sync tree and ring as
 * alone'). Without (one channel, or slots = 1) the ops go on the rank's
 * lane itself. Returns the first signal id (the starts, then the ends at
 * start + nl), or -1 without forks. */
static int32_t fork_lanes(coll_gen *g, prog_set *ps, const int32_t *lanes,
                          coll_forks *forks, int32_t *from, size_t nl)
{
    int32_t start = -1, N = g->N;
    if (g->chan_lanes > 1 && !g->oom) {
        start = ps->nsignals; /* start + s, then the ends start + nl + s */
        ps->nsignals += 2 * (int32_t)nl;
    }
    for (size_t s = 0; s < nl && !g->oom; s++) {
        int32_t i = (int32_t)(s % (size_t)N);
        g->last_step[s] = -1; /* never batched with the lane's earlier ops */
        if (g->chan_lanes == 1) {
            g->lane[s] = lanes[i];
            continue;
        }
        g->lane[s] = fork_lane(ps, forks, lanes[i], g->rank[i],
                               (int32_t)(s / (size_t)N));
        if (g->lane[s] < 0) {
            g->oom = 1;
            break;
        }
        from[s] = ps->lanes[g->lane[s]].n;
        prog_op w = prog_signal(PROG_WAIT, start + (int32_t)s);
        prog_op sg = prog_signal(PROG_SIGNAL, start + (int32_t)s);
        if (prog_push(ps, g->lane[s], &w) || prog_push(ps, lanes[i], &sg))
            g->oom = 1;
    }
    return start;
}

/* Each fork signals its end and the rank's lane waits for all of them,
 * then every op appended carries the caller's tag. */
static void join_and_tag(coll_gen *g, prog_set *ps, const int32_t *lanes,
                         int32_t start, const int32_t *from, size_t nl,
                         int32_t tag)
{
    size_t N = (size_t)g->N;
    for (size_t s = 0; start >= 0 && s < nl && !g->oom; s++) {
        int32_t i = (int32_t)(s % N);
        int32_t id = start + (int32_t)(nl + s);
        prog_op sg = prog_signal(PROG_SIGNAL, id);
        prog_op w = prog_signal(PROG_WAIT, id);
        if (prog_push(ps, g->lane[s], &sg) || prog_push(ps, lanes[i], &w))
            g->oom = 1;
    }
    for (size_t s = 0; !g->oom && s < nl + N; s++) {
        if (s < nl && start < 0)
            continue; /* the rank's own lane, below */
        prog_lane *l = &ps->lanes[s < nl ? g->lane[s] : lanes[s - nl]];
        for (int32_t o = from[s]; o < l->n; o++)
            l->ops[o].tag = tag;
    }
}

int coll_append(prog_set *ps, const net *nw, const coll_spec *spec,
                const int32_t *lanes, coll_forks *forks, int32_t tag, int *used,
                int *used_proto, ps_err *err)
{
    coll_view v;
    coll_gen g;
    memset(&g, 0, sizeof g);
    int algo, proto;
    int32_t chunks;
    double pred;
    int rc = pick(spec, nw, &v, &algo, &proto, &pred, &chunks, err);
    if (rc)
        return rc;
    int32_t N = v.N;
    g.ps = ps;
    g.append = 1;
    g.rank = v.rank;
    g.N = N;
    g.n = v.n;
    /* the lanes the standalone collective runs (plan's own lanes): a
     * pipelined ring's channels and the split tree's up and down lanes
     * each in a lane of their own, forked from the rank's lane below */
    plan(&g, spec, nw, &v, algo, 1);
    if ((rc = coll_cost_wire(spec, nw, &v, algo, proto, &g.wire, err))) {
        coll_view_free(&v);
        return rc;
    }
    size_t nl = (size_t)N * (size_t)g.chan_lanes;
    g.sent = calloc((size_t)N, sizeof *g.sent);
    g.lane = malloc(nl * sizeof *g.lane);
    g.last_step = malloc(nl * sizeof *g.last_step);
    int32_t *from = calloc(nl + (size_t)N, sizeof *from);
    if (!g.sent || !g.lane || !g.last_step || !from)
        g.oom = 1;
    double over = spec->bytes > 0
                      ? coll_proto_overhead(spec, N, algo, proto, g.channels)
                      : 0;
    head_delay(&g, ps, lanes, over, from, nl);
    int32_t start = fork_lanes(&g, ps, lanes, forks, from, nl);
    g.record = spec->moves != NULL;
    if (!g.oom)
        emit(&g, spec, &v, algo, chunks);
    if (!g.oom && spec->moves && note_moves(spec->moves, &g, ps->nmsgs))
        g.oom = 1;
    join_and_tag(&g, ps, lanes, start, from, nl, tag);
    free(from);
    rc = g.oom ? ps_errf(err, "out of memory generating a collective") : PS_OK;
    if (used)
        *used = algo;
    if (used_proto)
        *used_proto = proto;
    free(g.sent);
    gen_free(&g);
    coll_view_free(&v);
    return rc;
}
