/* A collective as a run, with the same life cycle as a pipeline step
 * (pipe_run): set up on a reused engine and program set, executed, and
 * recorded, failures included. Also the defaults a caller gets for what it
 * leaves out: auto's candidates and the node size of hierarchical
 * algorithms. */
#include "coll/coll.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"

struct coll_ctx {
    eng_sim *eng;
    prog_set *ps;
    int busy; /* inside coll_exec */
};

coll_ctx *coll_ctx_new(void)
{
    coll_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return NULL;
    ctx->eng = eng_new();
    ctx->ps = prog_new(1);
    if (!ctx->eng || !ctx->ps) {
        coll_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

void coll_ctx_free(coll_ctx *ctx)
{
    if (!ctx)
        return;
    eng_free(ctx->eng);
    prog_free(ctx->ps);
    free(ctx);
}

unsigned coll_default_candidates(enum coll_op op)
{
    /* nvls only where it applies (coll_cost_choose skips it elsewhere) */
    return op == COLL_ALLREDUCE
               ? 1u << COLL_RING | 1u << COLL_TREE | 1u << COLL_NVLS
               : 0;
}

int32_t coll_ranks_per_node(int32_t gpus_per_node, const int32_t *ranks,
                            int32_t n)
{
    int32_t g = gpus_per_node;
    if (g < 2)
        return 0;
    if (!ranks)
        return g;
    int32_t k = 1;
    while (k < n && ranks[k] / g == ranks[0] / g)
        k++;
    if (k < 2 || n % k)
        return 0;
    /* every block of k listed ranks on one node, and no node twice: a
     * data-parallel group under tensor parallelism ({0, 2, 4, 6, 8, ...}
     * for TP 2) is 4 ranks on each node, and NCCL runs one ring channel
     * through each of their NICs, as for whole nodes */
    int32_t maxnode = 0;
    for (int32_t i = 0; i < n; i++)
        if (ranks[i] < 0)
            return 0;
        else if (ranks[i] / g > maxnode)
            maxnode = ranks[i] / g;
    unsigned char *seen = calloc((size_t)maxnode + 1, 1);
    if (!seen)
        return 0; /* one ring: the conservative model, never wrong input */
    int32_t rpn = k;
    for (int32_t i = 0; i < n && rpn; i += k) {
        int32_t node = ranks[i] / g;
        if (seen[node])
            rpn = 0;
        seen[node] = 1;
        for (int32_t l = 1; l < k && rpn; l++)
            if (ranks[i + l] / g != node)
                rpn = 0;
    }
    free(seen);
    return rpn;
}

/* Checks coll_run leaves to its cost model, with the message a user can
 * act on. */
static int check_spec(const coll_spec *spec, ps_err *err)
{
    if (spec->algorithm == COLL_HIERARCHICAL && spec->ranks_per_node < 1)
        return ps_errf(err, "algorithm 'hierarchical' needs nodes: a cluster "
                            "with gpus_per_node > 1 and ranks that are whole "
                            "nodes in order (or set ranks_per_node)");
    return PS_OK;
}

/* Writes the run's rows; error != NULL records it as failed. */
static int record(const coll_ctx *ctx, const coll_spec *spec, const net *nw,
                  const coll_rec *rc, const coll_result *res, const char *error,
                  int streamed, int64_t *id, ps_err *err)
{
    rec_run run = {
        .kind = "collective",
        .name = rc->used_name,
        .p2p = spec->p2p == ENG_EAGER ? "eager" : "rendezvous",
        .dp =
            error ? (spec->ranks ? spec->nranks : net_ranks(nw)) : res->nranks,
        .makespan = error ? NAN : res->time,
        .bubble = NAN,
        .closed_form_bubble = NAN,
        .imbalance = NAN,
        .peak_memory = NAN,
        .params_json = rc->params_json,
        .status = error ? "failed" : "ok",
        .error = error,
        .meta = rc->meta,
        .backend = rc->live ? "tcp" : NULL,
        .simulated = rc->live && !error ? rc->live->simulated : NAN,
    };
    rec_collective row = {
        .op = coll_op_name(spec->op),
        .algorithm = coll_algo_name(res->algorithm),
        .protocol = coll_proto_name(res->protocol),
        .ranks = res->nranks,
        .bytes = (double)spec->bytes,
        .time = res->time,
        .algbw = res->algbw,
        .busbw = res->busbw,
    };
    rec_payload pl = {
        .run = &run,
        .collective = error ? NULL : &row,
        .progs = streamed ? NULL : ctx->ps,
        .network = rc->live ? NULL : nw, /* the twin's link loads */
    };
    return rc->sink->write(rc->sink->ctx, &pl, error ? REC_SUMMARY : rc->level,
                           id, err);
}

int coll_exec(coll_ctx *ctx, const coll_spec *spec, net *nw, coll_rec *rc,
              coll_result *res, ps_err *err)
{
    memset(res, 0, sizeof *res);
    rc->id = 0;
    if (ctx->busy)
        return ps_errf(err, "a data function cannot run a collective");
    int status = check_spec(spec, err);
    /* Event rows are handed out as the engine completes ops (the sink's
     * stream_begin; rec/stream.c),
     * so the programs need not be kept and the ring runs as a generator
     * (coll_spec.stream). Not with a data function: it runs Lua inside
     * coll_run, which may record other runs into the same database while
     * this run's transaction is open; its rows are read back from the
     * programs instead. */
    coll_spec run_spec = *spec;
    int streamed = status == PS_OK && rc->sink && rc->level == REC_EVENTS &&
                   spec->data != COLL_DATA_FN && !rc->live;
    if (streamed) {
        eng_sink hook;
        if (rc->sink->stream_begin(rc->sink->ctx, &hook, err))
            return PS_ERR;
        eng_set_sink(ctx->eng, &hook);
        run_spec.stream = 1;
    }
    if (status == PS_OK) {
        ctx->busy = 1;
        /* live mode: the same programs run for real (coll/live.c) */
        status = rc->live
                     ? coll_live_run(&run_spec, nw, ctx->eng, ctx->ps, rc->live,
                                     res, err)
                     : coll_run(&run_spec, nw, ctx->eng, ctx->ps, res, err);
        ctx->busy = 0;
    }
    if (streamed)
        eng_set_sink(ctx->eng, NULL);
    if (rc->data_error && rc->data_error(spec->data_ctx, err)) {
        coll_result_free(res);
        status = PS_ERR;
    }
    if (rc->name) {
        rc->used_name = rc->name;
    } else {
        /* a failed auto has no choice to name */
        snprintf(rc->name_buf, sizeof rc->name_buf, "%s %s",
                 coll_op_name(spec->op),
                 coll_algo_name(status ? spec->algorithm : res->algorithm));
        rc->used_name = rc->name_buf;
    }
    /* a run cut short by a signal or a limit leaves no rows (base/limit.h) */
    if (rc->sink && status != PS_OK && limit_stopped())
        rc->sink->stream_cancel(rc->sink->ctx);
    if (!rc->sink || (status != PS_OK && limit_stopped()))
        return status;
    if (status == PS_OK) {
        if (record(ctx, spec, nw, rc, res, NULL, streamed, &rc->id, err)) {
            coll_result_free(res);
            return PS_ERR;
        }
        return PS_OK;
    }
    /* a failed collective leaves a failed run row, as a failed pipeline
     * does (README, "The results database") */
    ps_err rec_err;
    char msg[sizeof err->msg];
    memcpy(msg, err->msg, sizeof msg);
    if (record(ctx, spec, nw, rc, res, msg, streamed, &rc->id, &rec_err))
        ps_errf(err, "%s (and recording the failure failed: %s)", msg,
                rec_err.msg);
    return PS_ERR;
}
