/* PyTorch's schedules, transcribed from torch/distributed/pipelining/
 * schedules.py (github.com/pytorch/pytorch): each function names the
 * method it follows. PyTorch pads the orders with None (idle time steps);
 * its _PipelineScheduleRuntime skips them, so only the compute order is
 * kept here. */
#include "sched/pt.h"

#include <stdlib.h>

typedef struct out {
    sched_action *a;
    int32_t n, max;
} out;

static void put(out *o, uint8_t kind, int32_t chunk, int32_t mb)
{
    if (o->n < o->max)
        o->a[o->n] =
            (sched_action){.kind = kind, .chunk = (int16_t)chunk, .mb = mb};
    o->n++;
}

int32_t sched_pt_round(int32_t p, int32_t m)
{
    int32_t rounds = m / p > 1 ? m / p : 1;
    return m % rounds == 0 ? m / rounds : 0;
}

/* ScheduleLoopedBFS._calculate_single_rank_operations: every forward of
 * local stage 0, then of stage 1, ...; then the backwards, last stage
 * first, microbatches in reverse. */
static void looped_bfs(const sched_spec *s, out *o)
{
    for (int32_t c = 0; c < s->v; c++)
        for (int32_t mb = 0; mb < s->m; mb++)
            put(o, PROG_F, c, mb);
    for (int32_t c = s->v - 1; c >= 0; c--)
        for (int32_t mb = s->m - 1; mb >= 0; mb--)
            put(o, PROG_B, c, mb);
}

/* _get_warmup_ops, the stage-index lambdas of
 * ScheduleInterleaved1F1B / ScheduleInterleavedZeroBubble
 * ._calculate_single_rank_operations, and _get_1f1b_rank_ops. The zero
 * bubble variant warms up one op per hop instead of two, runs I (input
 * gradient) where the other runs B, and after rank r's first r steady
 * steps appends the W of the oldest backward after each backward. */
static int interleaved(const sched_spec *s, int32_t r, int zb, out *o)
{
    int32_t p = s->p, v = s->v, m = s->m;
    int32_t mpr = sched_pt_round(p, m);
    int32_t warm = (v - 1) * mpr + (zb ? 1 : 2) * (p - 1 - r);
    if (warm > m * v)
        warm = m * v;
    int32_t fwd_bwd = m * v - warm, cooldown = m * v - fwd_bwd;
    int32_t total = warm + fwd_bwd + cooldown;
    int32_t *cnt = calloc((size_t)v * 3, sizeof *cnt);
    int32_t *bops = malloc((size_t)total * sizeof *bops);
    if (!cnt || !bops) {
        free(cnt);
        free(bops);
        return -1;
    }
    int32_t *fmb = cnt, *bmb = cnt + v, *wmb = cnt + 2 * v;
    int32_t nb = 0, nw = 0;
#define FCHUNK(step) (((step) / mpr) % v)
#define BCHUNK(step) (v - 1 - (((step)-warm) / mpr) % v)
    for (int32_t op = 0; op < total; op++) {
        if (op < warm + fwd_bwd) {
            int32_t c = FCHUNK(op);
            put(o, PROG_F, c, fmb[c]++);
        }
        if (op < warm)
            continue;
        int32_t c = BCHUNK(op);
        put(o, PROG_B, c, bmb[c]++);
        bops[nb++] = op;
        if (zb && op - warm >= r) {
            int32_t wc = BCHUNK(bops[nw++]);
            put(o, PROG_W, wc, wmb[wc]++);
        }
    }
    while (zb && nw < nb) {
        int32_t wc = BCHUNK(bops[nw++]);
        put(o, PROG_W, wc, wmb[wc]++);
    }
#undef FCHUNK
#undef BCHUNK
    free(cnt);
    free(bops);
    return 0;
}

/* put, dropping microbatches >= m (ZB-V plans more, see below). */
static void put_below(out *o, uint8_t kind, int32_t chunk, int32_t mb,
                      int32_t m)
{
    if (mb < m)
        put(o, kind, chunk, mb);
}

/* ScheduleZBVZeroBubble._calculate_single_rank_operations, on the V
 * placement: chunk 0 is stage r, chunk 1 stage 2p - 1 - r. It plans
 * max(2p - 1, m) microbatches and drops those beyond m. */
static void zbv(const sched_spec *s, int32_t r, out *o)
{
    int32_t p = s->p, m = s->m, nm = 2 * p - 1 > m ? 2 * p - 1 : m;
    int32_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
#define PUT(k, c, mb) put_below(o, k, c, mb, m)
    for (int32_t i = 0; i < 2 * (p - r) - 1; i++, f0++)
        PUT(PROG_F, 0, f0);
    for (int32_t i = 0; i < r; i++) {
        PUT(PROG_F, 1, f1++);
        PUT(PROG_F, 0, f0++);
    }
    for (int32_t i = 0; i < p - r; i++, b1++) {
        PUT(PROG_F, 1, f1++);
        PUT(PROG_B, 1, b1);
        PUT(PROG_W, 1, b1);
    }
    while (f1 < f0 || f0 < nm) {
        if (f0 < nm)
            PUT(PROG_F, 0, f0++);
        PUT(PROG_B, 0, b0);
        PUT(PROG_W, 0, b0);
        b0++;
        PUT(PROG_F, 1, f1++);
        PUT(PROG_B, 1, b1);
        PUT(PROG_W, 1, b1);
        b1++;
    }
    int32_t w0 = b0, w1 = b1;
    for (int32_t i = 0; i < r; i++) {
        PUT(PROG_B, 0, b0++);
        PUT(PROG_B, 1, b1++);
    }
    for (int32_t i = 0; i < p - r; i++) {
        PUT(PROG_B, 0, b0++);
        PUT(PROG_W, 0, w0++);
    }
    while (w1 < b1)
        PUT(PROG_W, 1, w1++);
    while (w0 < b0)
        PUT(PROG_W, 0, w0++);
#undef PUT
}

/* ScheduleDualPipeV._calculate_single_rank_operations (after DeepSeek's
 * DualPipeV), on the V placement: chunk 0 is stage r, chunk 1 stage
 * 2p - 1 - r. Counters per chunk: F, I (shared with full backwards) and
 * W; an I queues its W, which add_weight_action_if_pending emits oldest
 * first. An overlapped F/B pair (OVERLAP_F_B with sub-actions F and a
 * full B) is one FB action; its duration model is sched_fb_time's (by
 * default F + B, what PyTorch's runtime does when no overlap function is
 * registered: the sub-actions one after the other). */
typedef struct dpv {
    out *o;
    int32_t f[2], b[2], w[2];
    int32_t *qc, *qm; /* weight queue, FIFO */
    int32_t qhead, qtail;
} dpv;

static void dpv_f(dpv *d, int c)
{
    put(d->o, PROG_F, c, d->f[c]++);
}

static void dpv_b(dpv *d, int c, int split)
{
    int32_t mb = d->b[c]++;
    put(d->o, PROG_B, c, mb);
    if (split) {
        d->qc[d->qtail] = c;
        d->qm[d->qtail++] = mb;
    } else {
        d->w[c]++; /* increment_backward_counts */
    }
}

/* OVERLAP_F_B: one FB action (sched/sched.h), a full backward */
static void dpv_overlap(dpv *d, int fc, int bc)
{
    if (d->o->n < d->o->max)
        d->o->a[d->o->n] = (sched_action){.kind = SCHED_FB,
                                          .chunk = (int16_t)fc,
                                          .mb = d->f[fc],
                                          .bchunk = (int16_t)bc,
                                          .bmb = d->b[bc]};
    d->o->n++;
    d->f[fc]++;
    d->b[bc]++;
    d->w[bc]++; /* increment_backward_counts */
}

static void dpv_w(dpv *d)
{
    if (d->qhead == d->qtail)
        return;
    int32_t c = d->qc[d->qhead], mb = d->qm[d->qhead++];
    put(d->o, PROG_W, c, mb);
    d->w[c]++;
}

static int dualpipev(const sched_spec *s, int32_t r, out *o)
{
    int32_t p = s->p, m = s->m;
    dpv d = {o, {0, 0}, {0, 0}, {0, 0}, NULL, NULL, 0, 0};
    d.qc = malloc((size_t)(4 * m + 1) * sizeof *d.qc);
    d.qm = malloc((size_t)(4 * m + 1) * sizeof *d.qm);
    if (!d.qc || !d.qm) {
        free(d.qc);
        free(d.qm);
        return -1;
    }
    for (int32_t i = 0; i < (p - r - 1) * 2; i++) /* step 1: F0 */
        dpv_f(&d, 0);
    for (int32_t i = 0; i < r + 1; i++) { /* step 2: F0 F1 */
        dpv_f(&d, 0);
        dpv_f(&d, 1);
    }
    for (int32_t i = 0; i < p - r - 1; i++) { /* step 3: I1 W F1 */
        dpv_b(&d, 1, 1);
        dpv_w(&d);
        dpv_f(&d, 1);
    }
    for (int32_t i = 0; i < m - 2 * p + r + 1; i++) { /* step 4 */
        if (i == 0 && r == p - 1) { /* not overlapped, a smaller bubble */
            dpv_f(&d, 0);
            dpv_b(&d, 1, 0);
        } else {
            dpv_overlap(&d, 0, 1);
        }
        dpv_overlap(&d, 1, 0);
    }
    for (int32_t i = 0; i < p - r - 1; i++) { /* step 5: B1, F1B0 */
        dpv_b(&d, 1, 0);
        dpv_overlap(&d, 1, 0);
    }
    int zb = 0, n6 = r + 1; /* step 6: B1 B0, zero bubble from the middle */
    for (int32_t i = 0; i < n6; i++) {
        if (i == n6 / 2 && r % 2 == 1)
            zb = 1;
        dpv_b(&d, 1, zb);
        if (i == n6 / 2 && r % 2 == 0)
            zb = 1;
        dpv_b(&d, 0, zb);
    }
    for (int32_t i = 0; i < p - r - 1; i++) { /* step 7: W B0 */
        dpv_w(&d);
        dpv_b(&d, 0, zb);
    }
    for (int32_t i = 0; i < r + 1; i++) /* step 8: W */
        dpv_w(&d);
    free(d.qc);
    free(d.qm);
    return 0;
}

int sched_pt_order(const sched_spec *s, int32_t rank, sched_action *a,
                   int32_t max, int32_t *n)
{
    out o = {a, 0, max};
    switch (s->kind) {
    case SCHED_LOOPED_BFS: looped_bfs(s, &o); break;
    case SCHED_INTERLEAVED_PT:
    case SCHED_INTERLEAVED_ZB:
        if (interleaved(s, rank, s->kind == SCHED_INTERLEAVED_ZB, &o))
            return -1;
        break;
    case SCHED_ZBV: zbv(s, rank, &o); break;
    case SCHED_DUALPIPEV:
        if (dualpipev(s, rank, &o))
            return -1;
        break;
    default: /* SCHED_FORWARD_ONLY */
        for (int32_t mb = 0; mb < s->m; mb++)
            put(&o, PROG_F, 0, mb);
    }
    *n = o.n;
    return o.n > max ? -1 : 0;
}
