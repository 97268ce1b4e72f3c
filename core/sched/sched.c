/* Pipeline schedules: the per-rank compute orders of the built-in
 * schedules (transcriptions of the reference implementations; each
 * function names its source). sched/names.c names schedules and actions,
 * sched/check.c checks specs and custom lists, sched/lower.c turns orders
 * into programs, so a schedule differs from another only in its order. */
#include "sched/sched.h"
#include "sched/impl.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/ds.h"
#include "sched/pt.h"
#include "sched/zb.h"

static int sched_is_pytorch(enum sched_kind k)
{
    return k == SCHED_LOOPED_BFS || k == SCHED_INTERLEAVED_PT ||
           k == SCHED_INTERLEAVED_ZB || k == SCHED_ZBV || k == SCHED_DUALPIPEV;
}

/* The overlapped F&B of the DeepSeek-V3 report (section 3.2.1, DualPipe):
 * the two chunks' attention and MLP computation runs on one stream while
 * the other's all-to-all and PP communication runs on another, so what
 * the overlap can hide is communication. pipesim's F and B are times on
 * the compute stream, so by default nothing is hidden (fb_interference 1:
 * max + min = F + B, which is also what PyTorch's _PipelineScheduleRuntime
 * and DualPipe do without an overlapped_forward_backward function: F,
 * then B). fb_interference < 1 says that part of the shorter action
 * overlaps the longer (its communication share); overlap_fb is a measured
 * time. */
double sched_fb_time(const sched_spec *s, double f, double b)
{
    if (s->fb_given && s->overlap_fb > 0)
        return s->overlap_fb;
    double k = s->fb_given ? s->fb_interference : 1;
    return (f > b ? f : b) + k * (f < b ? f : b);
}

static void put_action(sched_buf *o, sched_action a, int join)
{
    if (o->n < o->max) {
        o->out[o->n] = a;
        if (o->join)
            o->join[o->n] = (uint8_t)join;
    }
    o->n++;
}

/* Appends a, with checkpointing an R for its backward right before it
 * (the gradient is received before the recompute, so the R joins a's
 * step) unless the order places its own. */
static void emit_action(sched_buf *o, sched_action a, int join)
{
    int has_b = a.kind == PROG_B || a.kind == SCHED_FB;
    int16_t bc = a.kind == SCHED_FB ? a.bchunk : a.chunk;
    int32_t bm = a.kind == SCHED_FB ? a.bmb : a.mb;
    if (has_b && o->checkpoint && !(o->has_r && o->has_r[bc * o->m + bm])) {
        put_action(o, (sched_action){.kind = PROG_R, .chunk = bc, .mb = bm},
                   join);
        join = 1;
    }
    put_action(o, a, join);
}

static void emit_step(sched_buf *o, uint8_t kind, int32_t chunk, int32_t mb,
                      int join)
{
    emit_action(o,
                (sched_action){.kind = kind, .chunk = (int16_t)chunk, .mb = mb},
                join);
}

static void emit(sched_buf *o, uint8_t kind, int32_t chunk, int32_t mb)
{
    emit_step(o, kind, chunk, mb, 0);
    /* W in a step of its own: B's input gradient is sent before W runs */
    if (kind == PROG_B && o->split)
        emit_step(o, PROG_W, chunk, mb, 0);
}

/* PyTorch torch.distributed.pipelining ScheduleGPipe._step_microbatches:
 * forwards 0..m-1, then backwards in the same order 0..m-1 (not reversed). */
static void order_gpipe(const sched_spec *s, sched_buf *o)
{
    for (int32_t i = 0; i < s->m; i++)
        emit(o, PROG_F, 0, i);
    for (int32_t i = 0; i < s->m; i++)
        emit(o, PROG_B, 0, i);
}

/* Megatron-LM megatron/core/pipeline_parallel/schedules.py,
 * forward_backward_pipelining_without_interleaving: warmup
 * min(p - r - 1, m) forwards, then F/B pairs, then the remaining
 * backwards; microbatches in order in both directions. */
static void order_1f1b(const sched_spec *s, int32_t r, sched_buf *o)
{
    int32_t warm = s->p - r - 1 < s->m ? s->p - r - 1 : s->m;
    int32_t steady = s->m - warm;
    for (int32_t i = 0; i < warm; i++)
        emit(o, PROG_F, 0, i);
    for (int32_t i = 0; i < steady; i++) {
        emit(o, PROG_F, 0, warm + i);
        emit(o, PROG_B, 0, i);
    }
    for (int32_t i = steady; i < s->m; i++)
        emit(o, PROG_B, 0, i);
}

/* Megatron-LM get_schedule_table with microbatch_group_size_per_vp_stage
 * = p (its default): virtual microbatch k walks p microbatches through
 * chunk 0, the same p through chunk 1, ..., then the next p. Needs
 * m % p == 0 (sched_check). Backwards use the same table with the chunk
 * mirrored (get_model_chunk_id(k, forward=False) = v - 1 - chunk). */
static void virtual_mb(const sched_spec *s, int32_t k, int forward,
                       int32_t *chunk, int32_t *mb)
{
    int32_t pv = s->p * s->v, in = k % pv;
    *chunk = forward ? in / s->p : s->v - 1 - in / s->p;
    *mb = k / pv * s->p + in % s->p;
}

/* Megatron-LM forward_backward_pipelining_with_interleaving and
 * get_pp_rank_microbatches (current main): warmup = 2 (p - r - 1) +
 * (v - 1) p virtual microbatches, all of them when that reaches m v; then
 * forward k + warmup followed by backward k; then the remaining backwards.
 * Unlike the non-interleaved schedule, a steady-state F/B pair is one step:
 * Megatron runs both and then exchanges everything in one
 * send_forward_backward_recv_forward_backward, so the gradient for the next
 * backward is received before the next forward runs. (Splitting the pair
 * with a batch between F and B deadlocks under rendezvous: every rank then
 * blocks sending a gradient that its neighbour only receives after its own
 * next forward.)
 * Older Megatron (before microbatch_group_size_per_vp_stage) also made
 * every rank all-warmup when m == p; current Megatron dropped that special
 * case and so do we. */
static void order_interleaved(const sched_spec *s, int32_t r, sched_buf *o)
{
    int32_t total = s->m * s->v;
    int32_t warm = 2 * (s->p - r - 1) + (s->v - 1) * s->p;
    if (warm > total)
        warm = total;
    int32_t c, mb;
    for (int32_t k = 0; k < warm; k++) {
        virtual_mb(s, k, 1, &c, &mb);
        emit(o, PROG_F, c, mb);
    }
    for (int32_t k = 0; k < total - warm; k++) {
        virtual_mb(s, k + warm, 1, &c, &mb);
        emit(o, PROG_F, c, mb);
        virtual_mb(s, k, 0, &c, &mb);
        emit_step(o, PROG_B, c, mb, 1);
        if (o->split)
            emit_step(o, PROG_W, c, mb, 0);
    }
    for (int32_t k = total - warm; k < total; k++) {
        virtual_mb(s, k, 0, &c, &mb);
        emit(o, PROG_B, c, mb);
    }
}

int sched_async(const sched_spec *s)
{
    return s->pytorch_p2p || sched_is_pytorch(s->kind) || sched_splits(s);
}

/* Megatron-style built-ins emit a W right after each B when split. */
int sched_builtin_split(const sched_spec *s)
{
    return s->split && s->kind <= SCHED_INTERLEAVED;
}

int sched_splits(const sched_spec *s)
{
    if (s->kind == SCHED_ZB_H1 || s->kind == SCHED_ZB_H2 ||
        s->kind == SCHED_INTERLEAVED_ZB || s->kind == SCHED_ZBV ||
        s->kind == SCHED_DUALPIPEV || s->kind == SCHED_DUALPIPE ||
        sched_builtin_split(s))
        return 1;
    if (s->kind != SCHED_CUSTOM || !s->custom || !s->ncustom)
        return 0;
    for (int32_t r = 0; r < s->p; r++)
        for (int32_t i = 0; i < s->ncustom[r]; i++)
            if (s->custom[r][i].kind == PROG_W)
                return 1;
    return 0;
}

/* The order of rank into o; s is checked. Fails with -1 when out of
 * memory, -2 when a zero-bubble schedule cannot fit its memory limit. */
int sched_order_rank(const sched_spec *s, int32_t rank, sched_buf *o,
                     ps_err *err)
{
    switch (s->kind) {
    case SCHED_GPIPE: order_gpipe(s, o); break;
    case SCHED_1F1B: order_1f1b(s, rank, o); break;
    case SCHED_INTERLEAVED: order_interleaved(s, rank, o); break;
    case SCHED_ZB_H1:
    case SCHED_ZB_H2: {
        sched_action *own = NULL;
        const sched_action *zb = o->zb;
        if (!zb) {
            own = malloc((size_t)3 * s->m * (size_t)s->p * sizeof *own);
            if (!own)
                return ps_errf(err, "out of memory ordering rank %d",
                               (int)rank);
            if (sched_zb_orders(s, own, err)) {
                free(own);
                return PS_ERR;
            }
            zb = own;
        }
        for (int32_t i = 0; i < 3 * s->m; i++) {
            const sched_action *x = &zb[rank * 3 * s->m + i];
            emit_step(o, x->kind, x->chunk, x->mb, 0);
        }
        free(own);
        break;
    }
    case SCHED_LOOPED_BFS:
    case SCHED_INTERLEAVED_PT:
    case SCHED_INTERLEAVED_ZB:
    case SCHED_ZBV:
    case SCHED_DUALPIPEV:
    case SCHED_DUALPIPE:
    case SCHED_FORWARD_ONLY: {
        int32_t cap = 3 * s->m * s->v, n = 0;
        sched_action *a = malloc((size_t)cap * sizeof *a);
        int rc = !a ? -1
                 : s->kind == SCHED_DUALPIPE
                     ? sched_ds_order(s, rank, a, cap, &n)
                     : sched_pt_order(s, rank, a, cap, &n);
        if (rc) {
            free(a);
            return ps_errf(err, "out of memory ordering rank %d", (int)rank);
        }
        for (int32_t i = 0; i < n; i++)
            emit_action(o, a[i], 0);
        free(a);
        break;
    }
    case SCHED_CUSTOM: {
        uint8_t *has_r = calloc((size_t)s->m * (size_t)s->v, 1);
        if (!has_r)
            return ps_errf(err, "out of memory ordering rank %d", (int)rank);
        for (int32_t i = 0; i < s->ncustom[rank]; i++) {
            const sched_action *x = &s->custom[rank][i];
            if (x->kind == PROG_R)
                has_r[x->chunk * s->m + x->mb] = 1;
        }
        o->has_r = has_r;
        for (int32_t i = 0; i < s->ncustom[rank]; i++)
            emit_action(o, s->custom[rank][i], 0);
        o->has_r = NULL;
        free(has_r);
        break;
    }
    }
    return 0;
}
