/* ZB-H1 / ZB-H2: a transcription of sail-sg's handcrafted zero-bubble
 * scheduler, Graph.manual_order and initial_solution in
 * megatron/core/pipeline_parallel/zerobubble/scheduler/zb.py
 * (github.com/sail-sg/zero-bubble-pipeline-parallelism). */
#include "sched/zb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ZF, ZB, ZW }; /* the reference's type index: F, B, W */

typedef struct zb {
    int32_t S, M;   /* stages, microbatches */
    double cost[3]; /* F, B, W seconds, uniform over stages */
    double mem[3];  /* F, B, W memory deltas, in microbatches */
    double max_mem; /* per stage */
    double comm;
    int32_t *cnt[3]; /* f, b, w: placed so far per stage */
    double *m, *e, *bubble;
    double max_bubble; /* get_max_bubble(): bubbles only grow */
    double *t;         /* completion time of each node */
} zb;

static int32_t id(const zb *z, int type, int32_t stage, int32_t mb)
{
    return type * z->S * z->M + stage * z->M + mb;
}

/* put(stage_j, type_k) */
static void put(zb *z, int32_t j, int k)
{
    int32_t i = z->cnt[k][j];
    double cost = z->cost[k];
    double tmp = z->e[j] + cost, no_bubble = tmp;
    if (j > 0 && k == ZF)
        tmp = fmax(tmp, z->t[id(z, ZF, j - 1, i)] + z->comm + cost);
    if (j < z->S - 1 && k == ZB)
        tmp = fmax(tmp, z->t[id(z, ZB, j + 1, i)] + z->comm + cost);
    if (z->cnt[ZF][j] > 0) {
        z->bubble[j] += tmp - no_bubble;
        if (z->bubble[j] > z->max_bubble)
            z->max_bubble = z->bubble[j];
    }
    z->e[j] = tmp;
    z->t[id(z, k, j, i)] = tmp;
    z->m[j] += z->mem[k];
    z->cnt[k][j]++;
}

/* The W placement before an F or B on stage j that waits for `ready`
 * (the neighbour's output plus comm): fill the wait with W's, then one
 * more W if the wait is short of the worst bubble or cannot be avoided. */
static void fill_with_w(zb *z, int32_t j, double ready, int greedy)
{
    int32_t *b = z->cnt[ZB], *w = z->cnt[ZW];
    while (w[j] < b[j] && z->e[j] + z->cost[ZW] <= ready)
        put(z, j, ZW);
    if (w[j] < b[j] && z->e[j] < ready) {
        if (ready - z->e[j] <= z->max_bubble - z->bubble[j]) {
            if (greedy)
                put(z, j, ZW);
        } else {
            put(z, j, ZW);
        }
    }
}

/* manual_order's result when the memory limit cannot be met (the
 * reference raises "Cannot fit memory"); a stage time is never negative */
#define NO_FIT (-2.0)

/* Makes room for an op of memory delta mem: W's until it fits; -1 when it
 * cannot. */
static int fit(zb *z, int32_t j, double mem)
{
    while (z->m[j] + mem > z->max_mem) {
        if (z->cnt[ZW][j] >= z->cnt[ZB][j])
            return -1; /* "Cannot fit memory" */
        put(z, j, ZW);
    }
    return 0;
}

/* manual_order's first microbatch: every stage's F, then as many extra
 * F's as fit before the first B comes back up the pipeline (the warm-up,
 * each stage no more than the one before it), then the B's from the last
 * stage down. */
static void first_round(zb *z, int allow_bubble_before_first_b,
                        int32_t *f_required)
{
    int32_t S = z->S, M = z->M, i = 0;
    int32_t *f = z->cnt[ZF];
    double cf = z->cost[ZF], cb = z->cost[ZB];
    for (int32_t j = 0; j < S; j++)
        put(z, j, ZF);
    double last_t = 0;
    for (int32_t j = S - 1; j >= 0; j--) {
        if (j == S - 1) {
            last_t = z->t[id(z, ZF, j, i)] + cb;
            continue;
        }
        double mem = z->m[j], cost = z->e[j];
        while (f[j] + f_required[j] < M && mem + z->mem[ZF] <= z->max_mem) {
            if (allow_bubble_before_first_b) {
                if (cost + cf > last_t + z->comm)
                    break;
            } else if (cost >= last_t + z->comm) {
                break;
            }
            mem += z->mem[ZF];
            cost += cf;
            f_required[j]++;
        }
        last_t = fmax(cost, last_t + z->comm) + cb;
    }
    for (int32_t j = 1; j < S; j++)
        while (f_required[j] > 0 && f_required[j] >= f_required[j - 1] &&
               f[j] + f_required[j] < M)
            f_required[j]--;
    for (int32_t j = 0; j < S; j++)
        for (int32_t k = f_required[j]; k > 0; k--)
            put(z, j, ZF);
    for (int32_t j = S - 1; j >= 0; j--)
        put(z, j, ZB);
}

/* Whether stage j runs an F this round: with prioritize_b, a stage two
 * F's ahead of the next one skips its F when that would delay the B
 * coming back (unless W's fill the wait anyway, or the bubble it leaves
 * is within the allowance). */
static int wants_f(const zb *z, int32_t j, int prioritize_b)
{
    const int32_t *f = z->cnt[ZF], *b = z->cnt[ZB], *w = z->cnt[ZW];
    double cf = z->cost[ZF], cb = z->cost[ZB], cw = z->cost[ZW];
    if (f[j] >= z->M)
        return 0;
    if (!(j + 1 < z->S && f[j] >= f[j + 1] + 2 && prioritize_b))
        return 1;
    double next_plus_fw = z->e[j + 1] + cf + cb + z->comm;
    if (z->e[j] >= next_plus_fw)
        return 0;
    double w_cost = 0, mem_with_w = z->m[j] + z->mem[ZF];
    int32_t w_cnt = 0;
    while (mem_with_w > z->max_mem && w[j] + w_cnt < b[j]) {
        w_cost += cw;
        mem_with_w += z->mem[ZW];
        w_cnt++;
    }
    if (z->e[j] + cf + w_cost <= next_plus_fw)
        return 1;
    if (next_plus_fw - (z->e[j] + 0.0) <= z->max_bubble - z->bubble[j])
        return 0;
    return 1;
}

/* manual_order's microbatch i > 0: the F's the stages want (no stage
 * ahead of the one before it), then a B on every stage from the last
 * down, each after W's that fill its wait or make room in memory.
 * Returns 0, or -1 when memory cannot fit (NO_FIT). */
static int later_round(zb *z, int32_t i, int prioritize_b, int no_bubble_greedy,
                       int32_t *f_required)
{
    int32_t S = z->S, M = z->M;
    int32_t *f = z->cnt[ZF], *b = z->cnt[ZB], *w = z->cnt[ZW];
    for (int32_t j = 0; j < S; j++)
        f_required[j] = wants_f(z, j, prioritize_b);
    for (int32_t j = S - 2; j >= 0; j--)
        if (f_required[j + 1] < f_required[j])
            f_required[j] = f_required[j + 1];
    for (int32_t j = 0; j < S; j++) {
        if (!f_required[j])
            continue;
        if (fit(z, j, z->mem[ZF]))
            return -1;
        if (j > 0)
            fill_with_w(z, j, z->t[id(z, ZF, j - 1, f[j])] + z->comm,
                        no_bubble_greedy);
        put(z, j, ZF);
    }
    for (int32_t j = S - 1; j >= 0; j--) {
        if (fit(z, j, z->mem[ZB]))
            return -1;
        if (j + 1 < S)
            fill_with_w(z, j, z->t[id(z, ZB, j + 1, i)] + z->comm,
                        no_bubble_greedy);
        if (j == 0 && f[j] == M)
            while (w[j] < b[j])
                put(z, j, ZW);
        put(z, j, ZB);
    }
    return 0;
}

/* Graph.manual_order; the completion times land in z->t. Returns the
 * longest stage time (best_time), or NO_FIT. */
static double manual_order(zb *z, int allow_bubble_before_first_b,
                           int prioritize_b, int no_bubble_greedy,
                           int32_t *f_required)
{
    int32_t S = z->S, M = z->M;
    int32_t *w = z->cnt[ZW];
    for (int k = 0; k < 3; k++)
        memset(z->cnt[k], 0, (size_t)S * sizeof(int32_t));
    for (int32_t j = 0; j < S; j++)
        z->m[j] = z->e[j] = z->bubble[j] = 0;
    memset(z->t, 0, (size_t)3 * S * M * sizeof *z->t);
    z->max_bubble = 0;
    for (int32_t i = 0; i < M; i++) {
        memset(f_required, 0, (size_t)S * sizeof(int32_t));
        if (i == 0)
            first_round(z, allow_bubble_before_first_b, f_required);
        else if (later_round(z, i, prioritize_b, no_bubble_greedy, f_required))
            return NO_FIT;
    }
    for (int32_t j = 0; j < S; j++)
        while (w[j] < M)
            put(z, j, ZW);
    double best = 0, cf = z->cost[ZF];
    for (int32_t j = 0; j < S; j++)
        best =
            fmax(best, z->t[id(z, ZW, j, M - 1)] - z->t[id(z, ZF, j, 0)] + cf);
    return best;
}

/* The reference takes the median over stages: sorted(x)[len(x) // 2]. */
static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

typedef struct node {
    double t;
    int32_t type, mb;
} node;

/* create_scheduled_nodes: a stage's nodes sorted by completion time
 * (Python's stable sort over F, B, W in microbatch order). */
static int cmp_node(const void *pa, const void *pb)
{
    const node *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    return (a->mb > b->mb) - (a->mb < b->mb);
}

int sched_zb_orders(const sched_spec *s, sched_action *out, ps_err *err)
{
    int32_t S = s->p, M = s->m, N = 3 * S * M;
    zb z = {.S = S, .M = M};
    /* the reference's fixed schedule before profiling (runtime.py,
     * wrapped_auto_schedule_forward_backward_func): F allocates one unit,
     * B nothing, W frees it; the limit is zero_bubble_max_pending_backward
     * = p (ZB-H1, "1x number of pipelines") or 2p (ZB-H2) units */
    z.mem[ZF] = 1;
    z.mem[ZB] = 0;
    z.mem[ZW] = -1;
    z.max_mem = (s->kind == SCHED_ZB_H2 ? 2.0 : 1.0) * S;
    z.comm = 0; /* stage costs here exclude the links (free comm) */
    double *cost = malloc((size_t)S * 3 * sizeof *cost);
    double *times[2];
    int32_t *ibuf = calloc((size_t)S * 4, sizeof *ibuf);
    double *dbuf = calloc((size_t)S * 3 + 2 * (size_t)N, sizeof *dbuf);
    node *nodes = malloc((size_t)3 * M * sizeof *nodes);
    if (!cost || !ibuf || !dbuf || !nodes) {
        free(cost);
        free(ibuf);
        free(dbuf);
        free(nodes);
        return ps_errf(err, "out of memory ordering %s", sched_name(s->kind));
    }
    for (int k = 0; k < 3; k++)
        z.cnt[k] = ibuf + k * S;
    int32_t *f_required = ibuf + 3 * S;
    z.m = dbuf;
    z.e = dbuf + S;
    z.bubble = dbuf + 2 * S;
    times[0] = dbuf + 3 * S;
    times[1] = times[0] + N;
    /* "Using uniform f/b/w timing for now": the median of each */
    for (int32_t j = 0; j < S; j++) {
        const sched_stage *g = &s->stages[j];
        cost[j] = g->fwd;
        cost[S + j] = g->bwd + (s->checkpoint ? g->recompute : 0);
        cost[2 * S + j] = g->wgt;
    }
    for (int k = 0; k < 3; k++) {
        qsort(cost + k * S, (size_t)S, sizeof *cost, cmp_double);
        z.cost[k] = cost[k * S + S / 2];
    }
    /* initial_solution: the best of eight variants, the first on ties */
    double best = -1;
    int have = 0, rc = PS_OK;
    for (int allow = 1; allow >= 0 && rc == PS_OK; allow--)
        for (int prio = 1; prio >= 0 && rc == PS_OK; prio--)
            for (int greedy = 1; greedy >= 0 && rc == PS_OK; greedy--) {
                z.t = times[have];
                double bt = manual_order(&z, allow, prio, greedy, f_required);
                if (bt == NO_FIT) {
                    rc = ps_errf(err,
                                 "%s: the zero-bubble scheduler cannot fit %d "
                                 "microbatches in its memory limit",
                                 sched_name(s->kind), (int)s->m);
                } else if (best < 0 || bt < best) {
                    best = bt;
                    have = 1 - have; /* keep it; the next run uses the other */
                }
            }
    const double *t = times[1 - have];
    for (int32_t j = 0; j < S && rc == PS_OK; j++) {
        int32_t n = 0;
        for (int type = 0; type < 3; type++)
            for (int32_t mb = 0; mb < M; mb++)
                nodes[n++] = (node){t[id(&z, type, j, mb)], type, mb};
        qsort(nodes, (size_t)n, sizeof *nodes, cmp_node);
        static const uint8_t kinds[3] = {PROG_F, PROG_B, PROG_W};
        for (int32_t k = 0; k < n; k++)
            out[j * 3 * M + k] =
                (sched_action){.kind = kinds[nodes[k].type], .mb = nodes[k].mb};
    }
    free(cost);
    free(ibuf);
    free(dbuf);
    free(nodes);
    return rc;
}
