/* A collective run for real: the data-mode simulation gives the programs,
 * what each message moves (coll_move) and the outputs to match; the
 * programs then run on one process per listed rank (live/live.h), each
 * moving float32 elements of its own buffer as the moves say, and every
 * output must equal data mode's bit for bit: the same additions in the
 * same order, since a rank applies a batch's receives in op order after
 * its sends read their data, as the replay does (coll/verify.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/impl.h"

typedef struct live_coll {
    const coll_spec *spec;
    const coll_move *moves;
    int32_t N;
    int64_t n, stride;  /* elements; floats per rank's buffer */
    int32_t *pos;       /* cluster rank -> position, -1 */
    const float *input; /* N x stride, every position's inputs */
    float *buf;         /* the worker's own buffer (in the worker) */
} live_coll;

static int lc_setup(void *ctx, int32_t rank, ps_err *err)
{
    live_coll *c = ctx;
    (void)rank;
    c->buf = malloc(((size_t)c->stride + 1) * sizeof *c->buf);
    return c->buf ? PS_OK : ps_errf(err, "out of memory");
}

static int lc_reset(void *ctx, int32_t rank, ps_err *err)
{
    live_coll *c = ctx;
    (void)err;
    memcpy(c->buf, c->input + (size_t)c->pos[rank] * (size_t)c->stride,
           (size_t)c->stride * sizeof *c->buf);
    return PS_OK;
}

static int lc_send(void *ctx, int32_t rank, int32_t lane, int32_t index,
                   const prog_op *op, const void **data, size_t *len,
                   ps_err *err)
{
    live_coll *c = ctx;
    (void)rank, (void)lane, (void)index, (void)err;
    const coll_move *mv = &c->moves[op->msg];
    *data = c->buf + mv->lo;
    *len = (size_t)mv->cnt * sizeof(float);
    return PS_OK;
}

static int lc_recv_len(void *ctx, int32_t rank, int32_t lane, int32_t index,
                       const prog_op *op, size_t *len, ps_err *err)
{
    live_coll *c = ctx;
    (void)rank, (void)lane, (void)index, (void)err;
    *len = (size_t)c->moves[op->msg].cnt * sizeof(float);
    return PS_OK;
}

static int lc_recv_target(void *ctx, int32_t rank, int32_t lane, int32_t index,
                          const prog_op *op, const void **dst, size_t *len,
                          ps_err *err)
{
    live_coll *c = ctx;
    (void)rank, (void)lane, (void)index, (void)err;
    const coll_move *mv = &c->moves[op->msg];
    *dst = c->buf + mv->dlo;
    *len = (size_t)mv->cnt * sizeof(float);
    return PS_OK;
}

/* d[e] += s[e], the same IEEE additions, element by element, as data
 * mode's; in blocks of 8 of a fixed count, restrict, so that -O2's cheap
 * vectoriser (GCC 12: no loop with a remainder) makes them vector adds */
static void add_floats(float *restrict d, const float *restrict s, size_t n)
{
    size_t e = 0;
    for (; e + 8 <= n; e += 8)
        for (size_t k = 0; k < 8; k++)
            d[e + k] += s[e + k];
    for (; e < n; e++)
        d[e] += s[e];
}

static int lc_recv_done(void *ctx, int32_t rank, int32_t lane, int32_t index,
                        const prog_op *op, const void *data, size_t len,
                        ps_err *err)
{
    live_coll *c = ctx;
    (void)rank, (void)lane, (void)index, (void)err;
    const coll_move *mv = &c->moves[op->msg];
    float *d = c->buf + mv->dlo;
    if (mv->add)
        add_floats(d, data, len / sizeof(float));
    else
        memcpy(d, data, len);
    return PS_OK;
}

/* As gloo's ring reduces from its receive buffer: a copy is read
 * straight into its place, a sum is added chunk by chunk as it arrives,
 * while the chunk is in the cache (live/wire.c), float by float. */
static int lc_recv_stream(void *ctx, int32_t rank, int32_t lane, int32_t index,
                          const prog_op *op, void **direct, size_t *unit,
                          ps_err *err)
{
    live_coll *c = ctx;
    (void)rank, (void)lane, (void)index, (void)err;
    const coll_move *mv = &c->moves[op->msg];
    *direct = mv->add ? NULL : c->buf + mv->dlo;
    *unit = mv->add ? sizeof(float) : 0;
    return PS_OK;
}

static int lc_recv_chunk(void *ctx, int32_t rank, int32_t lane, int32_t index,
                         const prog_op *op, size_t off, const void *data,
                         size_t len, ps_err *err)
{
    live_coll *c = ctx;
    (void)rank, (void)lane, (void)index, (void)err;
    const coll_move *mv = &c->moves[op->msg];
    add_floats(c->buf + mv->dlo + off / sizeof(float), data,
               len / sizeof(float));
    return PS_OK;
}

/* The rank's buffer; alltoall's own block is copied locally, as NCCL and
 * data mode do (coll/verify.c). */
static int lc_result(void *ctx, int32_t rank, const void **data, size_t *len,
                     ps_err *err)
{
    live_coll *c = ctx;
    (void)err;
    int32_t i = c->pos[rank];
    int64_t n = c->n;
    if (c->spec->op == COLL_ALLTOALL || c->spec->op == COLL_SENDRECV) {
        int64_t b = c->N ? n / c->N : 0;
        for (int64_t e = 0; e < n; e++) {
            int own = c->spec->op == COLL_ALLTOALL ? e / b == i : c->N == 1;
            int64_t at = c->spec->op == COLL_ALLTOALL ? i * b + e % b : e;
            if (own && isnan(c->buf[n + e]))
                c->buf[n + e] = c->buf[at];
        }
    }
    *data = c->buf;
    *len = (size_t)c->stride * sizeof *c->buf;
    return PS_OK;
}

static void lc_teardown(void *ctx, int32_t rank)
{
    live_coll *c = ctx;
    (void)rank;
    free(c->buf);
    c->buf = NULL;
}

static const live_ops coll_live_ops = {
    .setup = lc_setup,
    .reset = lc_reset,
    .send_data = lc_send,
    .recv_len = lc_recv_len,
    .recv_done = lc_recv_done,
    .recv_target = lc_recv_target,
    .recv_stream = lc_recv_stream,
    .recv_chunk = lc_recv_chunk,
    .result = lc_result,
    .teardown = lc_teardown,
};

/* Every listed rank's output, bit for bit against data mode's. */
static int compare(const live_coll *c, const coll_view *v,
                   const coll_result *res, const live_result *lr, ps_err *err)
{
    for (int32_t i = 0; i < c->N; i++) {
        int32_t r = v->rank[i];
        const float *got = lr->data[r];
        if (!got || lr->data_len[r] != (size_t)c->stride * sizeof(float))
            return ps_errf(err, "rank %d returned no output", (int)r);
        int64_t off = res->outputs[i] - (res->store_ + (size_t)i * c->stride);
        for (int64_t e = 0; e < res->out_count[i]; e++)
            if (memcmp(&got[off + e], &res->outputs[i][e], sizeof(float)))
                return ps_errf(err,
                               "rank %d element %lld: got %.9g over TCP, data "
                               "mode %.9g",
                               (int)r, (long long)e, (double)got[off + e],
                               (double)res->outputs[i][e]);
    }
    return PS_OK;
}

static int prepare(live_coll *c, const coll_spec *spec, const net *nw,
                   coll_view *v, ps_err *err)
{
    if (coll_check_spec(spec, nw, v, err))
        return PS_ERR;
    c->spec = spec;
    c->N = v->N;
    c->n = v->n;
    c->stride = coll_stride(spec->op, v->n);
    int32_t R = net_ranks(nw);
    c->pos = malloc(((size_t)R + 1) * sizeof *c->pos);
    float *in = malloc(((size_t)c->N * (size_t)c->stride + 1) * sizeof *in);
    c->input = in;
    if (!c->pos || !in)
        return ps_errf(err, "out of memory for the inputs");
    for (int32_t r = 0; r < R; r++)
        c->pos[r] = -1;
    for (int32_t i = 0; i < c->N; i++) {
        c->pos[v->rank[i]] = i;
        coll_data_inputs(spec, v, i, in + (size_t)i * (size_t)c->stride);
    }
    return PS_OK;
}

int coll_live_run(const coll_spec *spec, net *nw, eng_sim *eng, prog_set *ps,
                  coll_live *lv, coll_result *res, ps_err *err)
{
    memset(&lv->run, 0, sizeof lv->run);
    if (spec->protocol != COLL_PROTO_NONE)
        return ps_errf(err,
                       "backend 'tcp' runs the algorithm's own transfers: "
                       "protocol '%s' is NCCL's (give \"none\" or leave "
                       "it out)",
                       coll_proto_name(spec->protocol));
    /* the twin: data mode on the cluster, without the faults (a stall
     * would fail it) */
    coll_spec d = *spec;
    if (d.data == COLL_DATA_NONE)
        d.data = COLL_DATA_RANDOM;
    d.faults = NULL;
    d.stream = 0;
    int rc = coll_run(&d, nw, eng, ps, res, err);
    if (rc)
        return rc;
    lv->simulated = res->time;
    live_coll c = {.moves = res->moves};
    coll_view v = {0};
    rc = prepare(&c, &d, nw, &v, err);
    live_cfg cfg = {
        .ps = ps,
        .ops = &coll_live_ops,
        .ctx = &c,
        .iterations = lv->iterations,
        .warmup = lv->warmup,
        .faults = spec->faults,
        .watchdog = lv->watchdog,
        .inject = lv->inject,
    };
    if (rc == PS_OK)
        rc = live_run(&cfg, &lv->run, err);
    if (rc == PS_OK && lv->run.worker) { /* a rendezvous worker's copy */
        res->time = NAN;
        lv->simulated = NAN;
    } else if (rc == PS_OK) {
        rc = compare(&c, &v, res, &lv->run, err);
    }
    if (rc == PS_OK && !lv->run.worker) {
        res->time = lv->run.median;
        res->algbw = res->time > 0 ? (double)spec->bytes / res->time : 0;
        res->busbw = res->algbw * coll_busbw_factor(spec->op, res->nranks);
        for (int32_t i = 0; i < c.N; i++)
            res->bytes_sent[i] = lv->run.bytes_sent[v.rank[i]];
    }
    free(c.pos);
    free((void *)c.input);
    coll_view_free(&v);
    if (rc) {
        coll_result_free(res);
        coll_live_free(lv);
    }
    return rc;
}

void coll_live_free(coll_live *lv)
{
    live_result_free(&lv->run);
}
