/* The checks of a collective's spec against its network, and the view
 * they build (the member ranks by position), which every driver and cost
 * model reads: coll_check_spec, coll_view_free. */
#include "coll/coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/impl.h"

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
        coll_list_algos(spec->op, list, sizeof list);
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
