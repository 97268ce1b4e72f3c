/* DeepSeek's bidirectional DualPipe (DeepSeek-V3 report, section 3.2.1):
 * the per-rank order of DualPipe.step in github.com/deepseek-ai/DualPipe
 * (dualpipe/dualpipe.py), transcribed step by step. Each of the p ranks
 * (p even) holds two copies of the model's p stages: chunk 0 (DualPipe's
 * module 0) is stage r of the pipeline that runs rank 0 -> p-1, chunk 1
 * (module 1) stage p-1-r of the one that runs p-1 -> 0 (SCHED_DUAL).
 * Half the microbatches go each way: chunk 0 runs microbatches 0..m/2-1,
 * chunk 1 m/2..m-1. */
#include "sched/ds.h"

#include <stdlib.h>

typedef struct ds {
    sched_action *a;
    int32_t n, max;
    int second;         /* is_in_second_half: logical phase 0 is chunk 1 */
    int32_t half;       /* m / 2 */
    int32_t f[2], b[2]; /* current_f_chunk_id, current_b_chunk_id */
    int32_t *qc, *qm;   /* WeightGradStore.funcs_queue, FIFO */
    int32_t qhead, qtail;
} ds;

static void put(ds *d, sched_action x)
{
    if (d->n < d->max)
        d->a[d->n] = x;
    d->n++;
}

/* Microbatch k of chunk c, as recorded. */
static int32_t mb_of(const ds *d, int c, int32_t k)
{
    return c == 0 ? k : d->half + k;
}

/* _forward_compute_chunk(phase) */
static void fwd(ds *d, int phase)
{
    int c = phase ^ d->second;
    put(d, (sched_action){.kind = PROG_F,
                          .chunk = (int16_t)c,
                          .mb = mb_of(d, c, d->f[c]++)});
}

/* _backward_compute_chunk(phase, enable_zb): with zero bubble the weight
 * gradient is deferred (WeightGradStore.flush queues it) */
static void bwd(ds *d, int phase, int zb)
{
    int c = phase ^ d->second;
    int32_t mb = mb_of(d, c, d->b[c]++);
    put(d, (sched_action){.kind = PROG_B, .chunk = (int16_t)c, .mb = mb});
    if (zb) {
        d->qc[d->qtail] = c;
        d->qm[d->qtail++] = mb;
    }
}

/* _forward_backward_compute_chunk(phase0, phase1): the forward of phase0
 * overlapped with the (full) backward of phase1 */
static void fwd_bwd(ds *d, int phase0, int phase1)
{
    int c0 = phase0 ^ d->second, c1 = phase1 ^ d->second;
    int32_t fm = mb_of(d, c0, d->f[c0]++), bm = mb_of(d, c1, d->b[c1]++);
    put(d, (sched_action){.kind = SCHED_FB,
                          .chunk = (int16_t)c0,
                          .mb = fm,
                          .bchunk = (int16_t)c1,
                          .bmb = bm});
}

/* _weight_chunk: WeightGradStore.pop, oldest first */
static void wgt(ds *d)
{
    if (d->qhead == d->qtail)
        return;
    put(d, (sched_action){.kind = PROG_W,
                          .chunk = (int16_t)d->qc[d->qhead],
                          .mb = d->qm[d->qhead]});
    d->qhead++;
}

int sched_ds_order(const sched_spec *s, int32_t rank, sched_action *out,
                   int32_t max, int32_t *n)
{
    int32_t p = s->p, nh = p / 2;
    int32_t hr = rank < p - 1 - rank ? rank : p - 1 - rank; /* half_rank */
    int middle = rank == nh - 1 || rank == nh;
    ds d = {out,    0,    max,  rank >= nh, s->m / 2, {0, 0},
            {0, 0}, NULL, NULL, 0,          0};
    d.qc = malloc((size_t)(s->m + 1) * sizeof *d.qc);
    d.qm = malloc((size_t)(s->m + 1) * sizeof *d.qm);
    if (!d.qc || !d.qm) {
        free(d.qc);
        free(d.qm);
        return -1;
    }
    for (int32_t i = 0; i < (nh - hr - 1) * 2; i++) /* step 1: nF0 */
        fwd(&d, 0);
    for (int32_t i = 0; i < hr + 1; i++) { /* step 2: nF0F1 */
        fwd(&d, 0);
        fwd(&d, 1);
    }
    for (int32_t i = 0; i < nh - hr - 1; i++) { /* step 3: nB1W1F1 (ZB) */
        bwd(&d, 1, 1);
        wgt(&d);
        fwd(&d, 1);
    }
    for (int32_t i = 0; i < d.half - p + hr + 1; i++) { /* 4: nF0B1F1B0 */
        if (i == 0 && middle) {
            /* "We don't overlap these two chunks to further reduce
             * bubble size." */
            fwd(&d, 0);
            bwd(&d, 1, 0);
        } else {
            fwd_bwd(&d, 0, 1);
        }
        fwd_bwd(&d, 1, 0);
    }
    for (int32_t i = 0; i < nh - hr - 1; i++) { /* step 5: nB1F1B0 */
        bwd(&d, 1, 0);
        fwd_bwd(&d, 1, 0);
    }
    int zb = 0, n6 = hr + 1; /* step 6: nB1B0, the second half ZB */
    for (int32_t i = 0; i < n6; i++) {
        if (i == n6 / 2 && hr % 2 == 1)
            zb = 1;
        bwd(&d, 1, zb);
        if (i == n6 / 2 && hr % 2 == 0)
            zb = 1;
        bwd(&d, 0, zb);
    }
    for (int32_t i = 0; i < nh - hr - 1; i++) { /* step 7: nWB0 (ZB) */
        wgt(&d);
        bwd(&d, 0, 1);
    }
    for (int32_t i = 0; i < hr + 1; i++) /* step 8: nW */
        wgt(&d);
    int left = d.qhead != d.qtail; /* the reference asserts it empty */
    free(d.qc);
    free(d.qm);
    *n = d.n;
    return d.n > max || left ? -1 : 0;
}
