/* Collective data mode: deterministic float32 inputs, the replay of the
 * recorded transfers step by step in the order the algorithm moves them,
 * and the check of every rank's result against a float64 reference (within
 * N x FLT_EPSILON of the magnitude sum for reductions, exact for copies). */
#include "coll/coll.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/algo.h"
#include "coll/impl.h"

/* ------------------------------------------------------------------ */
/* Data mode                                                           */

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float input(const coll_spec *spec, int32_t rank, int64_t i)
{
    if (spec->data == COLL_DATA_FN)
        return (float)spec->data_fn(spec->data_ctx, rank, i);
    uint64_t z = mix(spec->seed ^
                     mix((uint64_t)rank * 0x100000001b3ull ^ mix((uint64_t)i)));
    return (float)((double)(z >> 11) * 0x1p-53 * 2 - 1);
}

void coll_data_inputs(const coll_spec *spec, const coll_view *v, int32_t i,
                      float *b)
{
    int64_t n = v->n;
    int32_t N = v->N, r = v->rank[i];
    enum coll_op op = spec->op;
    if (op == COLL_ALLTOALL || op == COLL_SENDRECV) {
        for (int64_t e = 0; e < 2 * n; e++)
            b[e] = e < n ? input(spec, r, e) : NAN;
        return;
    }
    int64_t lo = 0, hi = n;
    if (op == COLL_ALLGATHER) {
        lo = coll_seg_lo(n, N, i);
        hi = lo + coll_seg_cnt(n, N, i);
    }
    int holds = op != COLL_BROADCAST || i == v->root;
    for (int64_t e = 0; e < n; e++)
        b[e] = holds && e >= lo && e < hi ? input(spec, r, e) : NAN;
}

/* Applies the recorded transfers step by step: every payload of a step is
 * read before any of the step's receives lands, as a rank's batch sends
 * what it held when it was posted. O(transfers + elements moved). */
static int replay(coll_gen *g, float *buf, int64_t n)
{
    int32_t S = g->nsteps;
    int64_t *start = calloc((size_t)S + 1, sizeof *start);
    int64_t *order = malloc(((size_t)g->nx + 1) * sizeof *order);
    int64_t maxstep = 0;
    if (!start || !order) {
        free(start);
        free(order);
        return -1;
    }
    for (int64_t i = 0; i < g->nx; i++)
        start[g->x[i].step + 1]++;
    for (int32_t s = 0; s < S; s++)
        start[s + 1] += start[s];
    int64_t *fill = malloc(((size_t)S + 1) * sizeof *fill);
    if (!fill) {
        free(start);
        free(order);
        return -1;
    }
    memcpy(fill, start, ((size_t)S + 1) * sizeof *fill);
    for (int64_t i = 0; i < g->nx; i++)
        order[fill[g->x[i].step]++] = i;
    free(fill);
    for (int32_t s = 0; s < S; s++) {
        int64_t m = 0;
        for (int64_t k = start[s]; k < start[s + 1]; k++)
            m += g->x[order[k]].cnt;
        if (m > maxstep)
            maxstep = m;
    }
    float *pay = malloc(((size_t)maxstep + 1) * sizeof *pay);
    if (!pay) {
        free(start);
        free(order);
        return -1;
    }
    for (int32_t s = 0; s < S; s++) {
        float *p = pay;
        for (int64_t k = start[s]; k < start[s + 1]; k++) {
            const coll_xfer *x = &g->x[order[k]];
            memcpy(p, buf + (size_t)x->src * (size_t)n + (size_t)x->lo,
                   (size_t)x->cnt * sizeof *p);
            p += x->cnt;
        }
        p = pay;
        for (int64_t k = start[s]; k < start[s + 1]; k++) {
            const coll_xfer *x = &g->x[order[k]];
            float *d = buf + (size_t)x->dst * (size_t)n + (size_t)x->dlo;
            if (x->add)
                for (int64_t e = 0; e < x->cnt; e++)
                    d[e] += p[e];
            else
                memcpy(d, p, (size_t)x->cnt * sizeof *d);
            p += x->cnt;
        }
    }
    free(pay);
    free(start);
    free(order);
    return 0;
}

/* Fills the inputs into buf (N x n), runs the replay, checks the result and
 * sets up res's outputs (which then own buf). */
/* alltoall and sendrecv: inputs in each rank's send buffer, the receive
 * buffer (at n, stride 2n) checked exactly against the sender's elements
 * after the replay, which never writes a send buffer. */
static int verify_copies(const coll_spec *spec, const coll_view *v, coll_gen *g,
                         float *buf, coll_result *res, ps_err *err)
{
    int32_t N = v->N;
    int64_t n = v->n, st = 2 * n, b = n / N;
    for (int32_t i = 0; i < N; i++)
        coll_data_inputs(spec, v, i, buf + (size_t)i * (size_t)st);
    if (replay(g, buf, st))
        return ps_errf(err, "out of memory replaying the data");
    for (int32_t i = 0; i < N; i++) {
        const float *out = buf + (size_t)i * (size_t)st + (size_t)n;
        for (int64_t e = 0; e < n; e++) {
            /* alltoall: block j came from rank j's block i */
            int32_t from =
                spec->op == COLL_ALLTOALL ? (int32_t)(e / b) : (i + N - 1) % N;
            int64_t at = spec->op == COLL_ALLTOALL ? i * b + e % b : e;
            float want = buf[(size_t)from * (size_t)st + (size_t)at];
            if (from == i && isnan(out[e]))
                /* a rank's own block (alltoall, or sendrecv on one rank)
                 * does not cross the network: NCCL copies it locally, and
                 * so does the check */
                ((float *)out)[e] = want;
            if (memcmp(&out[e], &want, sizeof want) != 0)
                return ps_errf(err,
                               "rank %d element %lld: got %.9g, expected "
                               "%.9g",
                               (int)v->rank[i], (long long)e, (double)out[e],
                               (double)want);
        }
        res->outputs[i] = buf + (size_t)i * (size_t)st + (size_t)n;
        res->out_count[i] = n;
    }
    return PS_OK;
}

int coll_verify_run(const coll_spec *spec, const coll_view *v, coll_gen *g,
                    float *buf, coll_result *res, ps_err *err)
{
    int32_t N = v->N;
    int64_t n = v->n;
    enum coll_op op = spec->op;
    if (op == COLL_ALLTOALL || op == COLL_SENDRECV)
        return verify_copies(spec, v, g, buf, res, err);
    double *ref = malloc(((size_t)n + 1) * sizeof *ref);
    double *mag = malloc(((size_t)n + 1) * sizeof *mag);
    if (!ref || !mag) {
        free(ref);
        free(mag);
        return ps_errf(err, "out of memory for the reference result");
    }
    for (int32_t i = 0; i < N; i++)
        coll_data_inputs(spec, v, i, buf + (size_t)i * (size_t)n);
    int reduces =
        op == COLL_ALLREDUCE || op == COLL_REDUCE_SCATTER || op == COLL_REDUCE;
    for (int64_t e = 0; e < n; e++) {
        double s = 0, m = 0;
        if (reduces) {
            for (int32_t i = 0; i < N; i++) {
                double x = buf[(size_t)i * (size_t)n + (size_t)e];
                s += x;
                m += fabs(x);
            }
        } else {
            int32_t owner = v->root;
            if (op == COLL_ALLGATHER) /* the shard holding e */
                for (owner = 0;
                     owner + 1 < N && coll_seg_lo(n, N, owner + 1) <= e;
                     owner++)
                    ;
            s = buf[(size_t)owner * (size_t)n + (size_t)e];
        }
        ref[e] = s;
        mag[e] = m;
    }
    int rc = PS_OK;
    if (replay(g, buf, n))
        rc = ps_errf(err, "out of memory replaying the data");
    for (int32_t i = 0; i < N && rc == PS_OK; i++) {
        int64_t lo = 0, cnt = n;
        if (op == COLL_REDUCE_SCATTER) {
            lo = coll_seg_lo(n, N, i);
            cnt = coll_seg_cnt(n, N, i);
        } else if (op == COLL_REDUCE && i != v->root) {
            cnt = 0;
        }
        const float *b = buf + (size_t)i * (size_t)n;
        for (int64_t e = lo; e < lo + cnt; e++) {
            double tol = reduces ? N * (double)FLT_EPSILON * mag[e] : 0;
            if (!(fabs((double)b[e] - ref[e]) <= tol)) {
                rc = ps_errf(err,
                             "rank %d element %lld: got %.9g, expected "
                             "%.9g",
                             (int)v->rank[i], (long long)e, (double)b[e],
                             ref[e]);
                break;
            }
        }
        res->outputs[i] = buf + (size_t)i * (size_t)n + lo;
        res->out_count[i] = cnt;
    }
    free(ref);
    free(mag);
    return rc;
}
