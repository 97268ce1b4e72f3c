/* Collectives: the run driver (auto's pick, the counting pass, program
 * generation, the engine run) and coll_append. Names and tables live in
 * coll/names.c, the spec's checks in coll/spec.c, cost models in
 * coll/cost.c and `auto` in coll/choose.c, the data-mode replay and check
 * in coll/verify.c, the algorithm generators in coll/algo.c. */
#include "coll/coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "coll/algo.h"
#include "coll/gen_coll.h"
#include "coll/impl.h"

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
static void plan_lanes(coll_gen *g, const coll_spec *spec, const net *nw,
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

/* Emits algo into g's lanes (set up by the caller after plan_lanes): the
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
 * lanes of ps (set up after plan_lanes), and the per-rank byte counters. */
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
    plan_lanes(&g, spec, nw, &v, algo, 1);
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
        plan_lanes(&g, spec, nw, &v, algo, 1);
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
    /* the lanes the standalone collective runs (plan_lanes's own lanes): a
     * pipelined ring's channels and the split tree's up and down lanes
     * each in a lane of their own, forked from the rank's lane below */
    plan_lanes(&g, spec, nw, &v, algo, 1);
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
