/* Collective operations and algorithms by name: the tables every front
 * end and cost model reads (which algorithms run which op), their names
 * and nccl-tests' binary names, the bus bandwidth factor, the default
 * slots, and when nvls applies. Below everything else in coll/. */
#include "coll/coll.h"

#include <stdio.h>
#include <string.h>

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

void coll_list_algos(enum coll_op op, char *buf, size_t size)
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
    coll_list_algos(op, list, sizeof list);
    return ps_errf(err, "unknown %s algorithm '%s' (expected %s)",
                   coll_op_names_[op], name ? name : "", list);
}

/* NVLS needs the ranks on one node's switch (NCCL uses it across nodes
 * only with CollNet) and more than 2 of them: NCCL's ncclNvlsInit
 * (src/transport/nvls.cc) returns without NVLS when the communicator has
 * gpuCount <= 2 GPUs. A subset of a node (a data-parallel group under
 * tensor parallelism, a TP group) qualifies. */
int coll_nvls_applies(const coll_spec *spec, int32_t N)
{
    return spec->hw.nvls && N > 2 && spec->ranks_per_node == N;
}
