/* Pipeline schedules: per-rank compute orders and their lowering to programs.
 *
 * The built-in orders are transcriptions of the reference implementations
 * (each function names its source); sched_lower is shared by all of them and
 * by custom orders, so a schedule differs from another only in its order.
 * Invariant: every F, R and B of one (chunk, microbatch) lives on one rank and
 * the memory deltas of one microbatch's ops sum to zero.
 * The file stays whole for now (about 830 lines): sched_lower drives the
 * order generators through the private order buffer (order_rank, order),
 * so moving the lowering to a file of its own first needs that buffer in
 * an internal header. */
#include "sched.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_pt.h"
#include "sched_zb.h"

/* 4 * p * v * m actions must fit an int32 with room for message ids. */
#define MAX_ACTIONS (INT32_MAX / 4)

static const char *const names[] = {
    "gpipe",          "1f1b",  "interleaved",  "custom",
    "zb_h1",          "zb_h2", "looped_bfs",   "interleaved_pytorch",
    "interleaved_zb", "zbv",   "forward_only", "dualpipev"};
#define NKINDS ((int)(sizeof names / sizeof names[0]))

/* PyTorch's class names (get_schedule_class, case-insensitive). */
static const struct {
    const char *name;
    enum sched_kind kind;
} aliases[] = {
    {"afab", SCHED_GPIPE}, /* all forward, all backward: GPipe */
    {"schedulegpipe", SCHED_GPIPE},
    {"schedule1f1b", SCHED_1F1B},
    {"scheduleinterleaved1f1b", SCHED_INTERLEAVED_PT},
    {"scheduleloopedbfs", SCHED_LOOPED_BFS},
    {"scheduleinterleavedzerobubble", SCHED_INTERLEAVED_ZB},
    {"schedulezbvzerobubble", SCHED_ZBV},
    {"scheduledualpipev", SCHED_DUALPIPEV},
};

static int is_pytorch(enum sched_kind k)
{
    return k == SCHED_LOOPED_BFS || k == SCHED_INTERLEAVED_PT ||
           k == SCHED_INTERLEAVED_ZB || k == SCHED_ZBV || k == SCHED_DUALPIPEV;
}

static int same_nocase(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if ((*a | 0x20) != (*b | 0x20))
            return 0;
    return *a == *b;
}

int sched_parse(const char *name, enum sched_kind *out, ps_err *err)
{
    for (size_t k = 0; name && k < sizeof aliases / sizeof aliases[0]; k++) {
        if (same_nocase(name, aliases[k].name)) {
            *out = aliases[k].kind;
            return PS_OK;
        }
    }
    for (int k = 0; name && k < NKINDS; k++) {
        if (strcmp(name, names[k]) == 0) {
            *out = (enum sched_kind)k;
            return PS_OK;
        }
    }
    return ps_errf(err,
                   "unknown schedule '%s' (expected gpipe, afab, 1f1b, "
                   "interleaved, zb_h1, zb_h2, looped_bfs, "
                   "interleaved_pytorch, interleaved_zb, zbv, dualpipev, "
                   "forward_only, "
                   "a PyTorch class name or a list of actions per rank)",
                   name ? name : "(null)");
}

const char *sched_name(enum sched_kind kind)
{
    return (unsigned)kind < NKINDS ? names[kind] : "unknown";
}

enum sched_placement sched_default_placement(enum sched_kind kind)
{
    return kind == SCHED_ZBV || kind == SCHED_DUALPIPEV ? SCHED_V : SCHED_LOOP;
}

/* Writes "F3" or "B3.c1" (the chunk only when nonzero, as prog_describe). */
static void action_str(const sched_action *a, char *buf, size_t size)
{
    char k = prog_kind_letter((enum prog_kind)a->kind);
    if (a->chunk > 0)
        snprintf(buf, size, "%c%d.c%d", k, (int)a->mb, (int)a->chunk);
    else
        snprintf(buf, size, "%c%d", k, (int)a->mb);
}

/* Reads a decimal number of at most 9 digits at *p; -1 when none. */
static long read_num(const char **p)
{
    long n = 0;
    int digits = 0;
    while (**p >= '0' && **p <= '9' && digits < 10) {
        n = n * 10 + (**p - '0');
        (*p)++;
        digits++;
    }
    return digits == 0 || digits > 9 ? -1 : n;
}

int sched_parse_action(const char *text, int32_t m, int32_t v,
                       sched_action *out, ps_err *err)
{
    const char *p = text ? text : "";
    uint8_t kind;
    switch (*p) {
    case 'F': kind = PROG_F; break;
    case 'B': kind = PROG_B; break;
    case 'R': kind = PROG_R; break;
    case 'W': kind = PROG_W; break;
    default:
        return ps_errf(err,
                       "bad action '%s': expected F, B, W or R, a microbatch "
                       "and optionally a chunk, as in F3 or B0.c1",
                       p);
    }
    p++;
    long mb = read_num(&p), chunk = 0;
    if (mb < 0)
        return ps_errf(err, "bad action '%s': expected a microbatch after %c",
                       text, text[0]);
    if (p[0] == '.' && p[1] == 'c') {
        p += 2;
        chunk = read_num(&p);
        if (chunk < 0)
            return ps_errf(err, "bad action '%s': expected a chunk after .c",
                           text);
    }
    if (*p)
        return ps_errf(err, "bad action '%s': unexpected '%s'", text, p);
    /* the bounds in long: m - 1 must not overflow for any int32 m */
    if (mb >= m)
        return ps_errf(err, "action '%s': microbatch %ld out of range 0..%ld",
                       text, mb, (long)m - 1);
    if (chunk >= v || chunk > INT16_MAX)
        return ps_errf(err, "action '%s': chunk %ld out of range 0..%ld", text,
                       chunk, (long)v - 1);
    *out = (sched_action){kind, (int16_t)chunk, (int32_t)mb};
    return PS_OK;
}

static int bad_cost(double x)
{
    return !(x >= 0) || !isfinite(x);
}

/* Inference: the forward-only schedule, or custom lists without any
 * backward (DeepSpeed's InferenceSchedule runs forwards only). */
static int fwd_only(const sched_spec *s)
{
    if (s->kind == SCHED_FORWARD_ONLY)
        return 1;
    if (s->kind != SCHED_CUSTOM || !s->custom || !s->ncustom)
        return 0;
    for (int32_t r = 0; r < s->p; r++)
        for (int32_t i = 0; i < s->ncustom[r]; i++)
            if (s->custom[r] && s->custom[r][i].kind != PROG_F)
                return 0;
    return 1;
}

/* Checks one custom list. seen has 4 * m * v bytes (F, B, R, W marks). */
static int check_custom(const sched_spec *s, int32_t r, uint8_t *seen,
                        ps_err *err)
{
    int32_t mv = s->m * s->v;
    char a[48], b[48];
    memset(seen, 0, (size_t)mv * 4);
    for (int32_t i = 0; i < s->ncustom[r]; i++) {
        const sched_action *x = &s->custom[r][i];
        if (x->kind != PROG_F && x->kind != PROG_B && x->kind != PROG_R &&
            x->kind != PROG_W)
            return ps_errf(err,
                           "rank %d: action %d has kind %d, not F, B, W or R",
                           (int)r, (int)i, (int)x->kind);
        if (x->chunk < 0 || x->chunk >= s->v || x->mb < 0 || x->mb >= s->m)
            return ps_errf(err,
                           "rank %d: action %d (chunk %d, microbatch %d) out "
                           "of range (%d chunks, %d microbatches)",
                           (int)r, (int)i, (int)x->chunk, (int)x->mb, (int)s->v,
                           (int)s->m);
        action_str(x, a, sizeof a);
        int32_t id = x->chunk * s->m + x->mb;
        uint8_t *f = &seen[id], *bk = &seen[mv + id], *rc = &seen[2 * mv + id];
        uint8_t *wg = &seen[3 * mv + id];
        sched_action fa = *x;
        fa.kind = PROG_F;
        action_str(&fa, b, sizeof b);
        if (x->kind == PROG_R && !s->checkpoint)
            return ps_errf(err, "rank %d: %s needs checkpointing", (int)r, a);
        uint8_t *mine = x->kind == PROG_F   ? f
                        : x->kind == PROG_B ? bk
                        : x->kind == PROG_R ? rc
                                            : wg;
        if (*mine)
            return ps_errf(err, "rank %d: %s appears twice", (int)r, a);
        *mine = 1;
        if (x->kind != PROG_F && !*f)
            return ps_errf(err, "rank %d: %s comes before %s", (int)r, a, b);
        if (x->kind == PROG_W && !*bk) {
            fa.kind = PROG_B;
            action_str(&fa, b, sizeof b);
            return ps_errf(err, "rank %d: %s comes before %s", (int)r, a, b);
        }
        if (x->kind == PROG_R && *bk) {
            fa.kind = PROG_B;
            action_str(&fa, b, sizeof b);
            return ps_errf(err, "rank %d: %s comes after %s", (int)r, a, b);
        }
    }
    for (int32_t id = 0; id < (fwd_only(s) ? 1 : 2) * mv; id++) {
        if (seen[id])
            continue;
        sched_action miss = {id < mv ? PROG_F : PROG_B,
                             (int16_t)(id % mv / s->m), id % s->m};
        action_str(&miss, a, sizeof a);
        return ps_errf(err, "rank %d: %s is missing", (int)r, a);
    }
    return PS_OK;
}

int sched_check(const sched_spec *s, ps_err *err)
{
    if (s->p < 1)
        return ps_errf(err, "pipeline ranks must be at least 1 (got %d)",
                       (int)s->p);
    if (s->m < 1)
        return ps_errf(err, "microbatches must be at least 1 (got %d)",
                       (int)s->m);
    if (s->v < 1 || s->v > INT16_MAX)
        return ps_errf(err, "chunks per rank must be 1..%d (got %d)", INT16_MAX,
                       (int)s->v);
    if ((unsigned)s->kind >= NKINDS)
        return ps_errf(err, "unknown schedule kind %d", (int)s->kind);
    if (s->v > 1 && (s->kind == SCHED_GPIPE || s->kind == SCHED_1F1B ||
                     s->kind == SCHED_ZB_H1 || s->kind == SCHED_ZB_H2 ||
                     s->kind == SCHED_FORWARD_ONLY))
        return ps_errf(err,
                       "%s schedule runs one chunk per rank (got %d); use "
                       "interleaved or a custom schedule",
                       sched_name(s->kind), (int)s->v);
    if (s->placement == SCHED_V && s->v != 2)
        return ps_errf(err,
                       "chunk_placement 'v' needs 2 chunks per rank "
                       "(virtual_stages 2), got %d",
                       (int)s->v);
    if ((unsigned)s->placement > SCHED_V)
        return ps_errf(err, "unknown chunk placement %d", (int)s->placement);
    int vshape = s->kind == SCHED_ZBV || s->kind == SCHED_DUALPIPEV;
    if (vshape && s->placement != SCHED_V)
        return ps_errf(err,
                       "%s schedule needs chunk_placement 'v' (PyTorch's "
                       "%s places stages in a V)",
                       sched_name(s->kind),
                       s->kind == SCHED_ZBV ? "ScheduleZBVZeroBubble"
                                            : "ScheduleDualPipeV");
    if (vshape && s->v != 2)
        return ps_errf(err,
                       "%s schedule needs exactly 2 chunks per rank "
                       "(virtual_stages 2), got %d",
                       sched_name(s->kind), (int)s->v);
    if (s->kind == SCHED_DUALPIPEV && s->m < 2 * s->p)
        return ps_errf(err,
                       "dualpipev schedule needs at least as many "
                       "microbatches as stages (%d), got %d, as PyTorch's "
                       "ScheduleDualPipeV requires",
                       (int)(2 * s->p), (int)s->m);
    if (s->placement == SCHED_V && !vshape && s->kind != SCHED_CUSTOM)
        return ps_errf(err,
                       "%s schedule runs on chunk_placement 'loop', not 'v'",
                       sched_name(s->kind));
    if ((double)s->p * s->v * s->m * 4 > MAX_ACTIONS)
        return ps_errf(err,
                       "schedule too large: %d ranks x %d chunks x %d "
                       "microbatches",
                       (int)s->p, (int)s->v, (int)s->m);
    /* Megatron-LM requires microbatch_group_size_per_vp_stage (default p)
     * to divide m or leave a remainder >= p; with the default that means
     * m % p == 0. Other group sizes change the order, and the spec has no
     * field for one, so we reject rather than guess. */
    if (s->kind == SCHED_INTERLEAVED && s->m % s->p != 0)
        return ps_errf(err,
                       "interleaved schedule needs microbatches (%d) to be a "
                       "multiple of pipeline ranks (%d)",
                       (int)s->m, (int)s->p);
    /* PyTorch: number_of_rounds = max(1, m // p) must divide m */
    if ((s->kind == SCHED_INTERLEAVED_PT || s->kind == SCHED_INTERLEAVED_ZB) &&
        sched_pt_round(s->p, s->m) == 0)
        return ps_errf(err,
                       "%s schedule needs microbatches (%d) to be a multiple "
                       "of the number of rounds (%d = max(1, m / p)), as "
                       "PyTorch requires",
                       sched_name(s->kind), (int)s->m,
                       (int)(s->m / s->p > 1 ? s->m / s->p : 1));
    if (!s->stages)
        return ps_errf(err, "no stage costs given");
    for (int32_t i = 0; i < s->p * s->v; i++) {
        const sched_stage *st = &s->stages[i];
        if (bad_cost(st->fwd) || bad_cost(st->bwd) || bad_cost(st->recompute) ||
            bad_cost(st->wgt))
            return ps_errf(err,
                           "stage %d: compute times must be finite and "
                           "not negative",
                           (int)i);
        if (bad_cost(st->act_bytes) || bad_cost(st->in_bytes) ||
            bad_cost(st->out_bytes) || bad_cost(st->w_bytes))
            return ps_errf(err,
                           "stage %d: byte counts must be finite and "
                           "not negative",
                           (int)i);
    }
    if (s->kind != SCHED_CUSTOM)
        return PS_OK;
    if (!s->custom || !s->ncustom)
        return ps_errf(err, "custom schedule has no action lists");
    uint8_t *seen = malloc((size_t)s->m * (size_t)s->v * 4);
    if (!seen)
        return ps_errf(err, "out of memory checking the custom schedule");
    int rc = PS_OK;
    for (int32_t r = 0; r < s->p && rc == PS_OK; r++) {
        if (s->ncustom[r] < 0 || s->ncustom[r] > 4 * s->m * s->v ||
            (s->ncustom[r] > 0 && !s->custom[r]))
            rc = ps_errf(err, "rank %d: action list of %d entries", (int)r,
                         (int)s->ncustom[r]);
        else
            rc = check_custom(s, r, seen, err);
    }
    free(seen);
    return rc;
}

/* Collects an order; with checkpointing every B gets an R right before it
 * unless the order already holds that R (custom lists may place their own).
 * Actions are grouped into steps (see lower_rank): join[i] says action i
 * belongs to the step of action i - 1. */
typedef struct order {
    sched_action *out;
    uint8_t *join; /* NULL when the caller only wants the order */
    int32_t n, max;
    int checkpoint;
    const uint8_t *has_r; /* custom: R given for chunk * m + mb, or NULL */
    int32_t m;
    int split;              /* built-in: a W right after each B */
    const sched_action *zb; /* zero-bubble: all ranks' orders, or NULL */
} order;

static void emit_step(order *o, uint8_t kind, int32_t chunk, int32_t mb,
                      int join)
{
    if (kind == PROG_B && o->checkpoint &&
        !(o->has_r && o->has_r[chunk * o->m + mb])) {
        emit_step(o, PROG_R, chunk, mb, join);
        join = 1; /* the gradient is received before the recompute */
    }
    if (o->n < o->max) {
        o->out[o->n] = (sched_action){kind, (int16_t)chunk, mb};
        if (o->join)
            o->join[o->n] = (uint8_t)join;
    }
    o->n++;
}

static void emit(order *o, uint8_t kind, int32_t chunk, int32_t mb)
{
    emit_step(o, kind, chunk, mb, 0);
    /* W in a step of its own: B's input gradient is sent before W runs */
    if (kind == PROG_B && o->split)
        emit_step(o, PROG_W, chunk, mb, 0);
}

/* PyTorch torch.distributed.pipelining ScheduleGPipe._step_microbatches:
 * forwards 0..m-1, then backwards in the same order 0..m-1 (not reversed). */
static void order_gpipe(const sched_spec *s, order *o)
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
static void order_1f1b(const sched_spec *s, int32_t r, order *o)
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
static void order_interleaved(const sched_spec *s, int32_t r, order *o)
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
    return s->pytorch_p2p || is_pytorch(s->kind) || sched_splits(s);
}

/* Megatron-style built-ins emit a W right after each B when split. */
static int builtin_split(const sched_spec *s)
{
    return s->split && s->kind <= SCHED_INTERLEAVED;
}

int sched_splits(const sched_spec *s)
{
    if (s->kind == SCHED_ZB_H1 || s->kind == SCHED_ZB_H2 ||
        s->kind == SCHED_INTERLEAVED_ZB || s->kind == SCHED_ZBV ||
        s->kind == SCHED_DUALPIPEV || builtin_split(s))
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
static int order_rank(const sched_spec *s, int32_t rank, order *o)
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
            int rc = own ? sched_zb_orders(s, own) : -1;
            if (rc) {
                free(own);
                return rc;
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
    case SCHED_FORWARD_ONLY: {
        int32_t cap = 3 * s->m * s->v, n = 0;
        sched_action *a = malloc((size_t)cap * sizeof *a);
        if (!a || sched_pt_order(s, rank, a, cap, &n)) {
            free(a);
            return -1;
        }
        for (int32_t i = 0; i < n; i++)
            emit_step(o, a[i].kind, a[i].chunk, a[i].mb, 0);
        free(a);
        break;
    }
    case SCHED_CUSTOM: {
        uint8_t *has_r = calloc((size_t)s->m * (size_t)s->v, 1);
        if (!has_r)
            return -1;
        for (int32_t i = 0; i < s->ncustom[rank]; i++) {
            const sched_action *x = &s->custom[rank][i];
            if (x->kind == PROG_R)
                has_r[x->chunk * s->m + x->mb] = 1;
        }
        o->has_r = has_r;
        for (int32_t i = 0; i < s->ncustom[rank]; i++) {
            const sched_action *x = &s->custom[rank][i];
            emit(o, x->kind, x->chunk, x->mb);
        }
        o->has_r = NULL;
        free(has_r);
        break;
    }
    }
    return 0;
}

static int order_error(const sched_spec *s, int32_t rank, int rc, ps_err *err)
{
    if (rc == -2)
        return ps_errf(err,
                       "%s: the zero-bubble scheduler cannot fit %d "
                       "microbatches in its memory limit",
                       sched_name(s->kind), (int)s->m);
    return ps_errf(err, "out of memory ordering rank %d", (int)rank);
}

int sched_order(const sched_spec *s, int32_t rank, sched_action *out,
                int32_t max, int32_t *n, ps_err *err)
{
    if (sched_check(s, err))
        return PS_ERR;
    if (rank < 0 || rank >= s->p)
        return ps_errf(err, "rank %d outside the pipeline 0..%d", (int)rank,
                       (int)s->p - 1);
    order o = {out, NULL, 0, max, s->checkpoint, NULL, s->m, builtin_split(s),
               NULL};
    int rc = order_rank(s, rank, &o);
    if (rc)
        return order_error(s, rank, rc, err);
    *n = o.n;
    if (o.n > max)
        return ps_errf(err, "rank %d: order has %d actions but room for %d",
                       (int)rank, (int)o.n, (int)max);
    return PS_OK;
}

/* ---- lowering ---- */

typedef struct lower {
    const sched_spec *s;
    prog_set *ps;
    int32_t base;   /* first message id of this schedule */
    int32_t r;      /* pipeline rank being lowered */
    int async;      /* sends are isends (PROG_NOWAIT) */
    int fwd_only;   /* no backward at all: F keeps nothing */
    uint8_t *has_w; /* chunk * m + mb: this rank's order has its W */
} lower;

static int32_t cluster_rank(const sched_spec *s, int32_t r)
{
    return s->rank_of ? s->rank_of[r] : r;
}

/* Message of microbatch mb across the boundary between stages b and b + 1,
 * forward (activation) or backward (its gradient). Arithmetic ids keep the
 * lowering free of lookups: base + (dir * (S - 1) + b) * m + mb. */
static int32_t msg_id(const lower *L, int backward, int32_t b, int32_t mb)
{
    int32_t S = L->s->p * L->s->v;
    return L->base + ((backward ? S - 1 : 0) + b) * L->s->m + mb;
}

/* The transfer a's output needs (send) or a's input needs (!send); returns
 * 0 when there is none: first/last stage, or the neighbour stage on the
 * same rank (p == 1, or the tip of a V: PyTorch's "V-schedule special
 * case" hands the tensor over locally). */
static int transfer(const lower *L, const sched_action *a, int send,
                    prog_op *op)
{
    const sched_spec *s = L->s;
    int32_t S = s->p * s->v;
    int32_t st = sched_stage_of(s->placement, s->p, a->chunk, L->r);
    if (s->p == 1 || a->kind == PROG_R || a->kind == PROG_W)
        return 0;
    int fwd = a->kind == PROG_F;
    /* F receives from st - 1 and sends to st + 1; B the other way */
    int32_t peer_st = (fwd != send) ? st - 1 : st + 1;
    if (peer_st < 0 || peer_st >= S)
        return 0;
    int32_t b = peer_st < st ? peer_st : st; /* boundary b | b + 1 */
    int32_t peer_r = sched_rank_of(s->placement, s->p, peer_st);
    if (peer_r == L->r)
        return 0;
    int32_t peer = cluster_rank(s, peer_r);
    int32_t id = msg_id(L, !fwd, b, a->mb);
    double bytes = s->stages[b].out_bytes;
    enum prog_kind kind = fwd ? PROG_F : PROG_B;
    /* PyTorch's ScheduleGPipe posts its sends with isend and waits on them
     * only after the last forward (and the last backward): its ranks never
     * block on a send. Megatron's 1F1B and interleaved schedules wait on
     * every batch. (torch/distributed/pipelining/schedules.py,
     * ScheduleGPipe._step_microbatches: fwd_sends_to_wait) Schedules with
     * W do the same: the zero-bubble runtimes (sail-sg's zerobubble
     * runtime, PyTorch's _PipelineScheduleRuntime) isend and wait on sends
     * lazily, and a B's gradient must leave before its W runs. */
    unsigned flags = send && s->kind == SCHED_GPIPE ? PROG_NOWAIT : 0;
    if (send && L->async) /* the receive was posted ahead */
        flags = PROG_NOWAIT | PROG_EARLY;
    *op = send ? prog_send(peer, id, bytes, kind, a->mb, flags)
               : prog_recv(peer, id, bytes, kind, a->mb, flags);
    return 1;
}

/* Pushes ops[0..n) as one batch: PROG_BATCH on all but the last. */
static int push_batch(lower *L, int32_t lane, prog_op *ops, int n)
{
    for (int i = 0; i < n; i++) {
        ops[i].flags |= i + 1 < n ? PROG_BATCH : 0;
        if (prog_push(L->ps, lane, &ops[i]))
            return -1;
    }
    return 0;
}

/* Memory: F allocates the activations (only the input when
 * checkpointed), R the rest. A full B frees all of it. With a W, B frees
 * all but w_bytes and W frees w_bytes: the ZB paper's accounting, where F
 * costs M_B, B releases M_B - M_W and W releases M_W. */
static prog_op compute(const lower *L, const sched_action *a)
{
    const sched_spec *s = L->s;
    int32_t st = sched_stage_of(s->placement, s->p, a->chunk, L->r);
    const sched_stage *g = &s->stages[st];
    double extra = g->act_bytes > g->in_bytes ? g->act_bytes - g->in_bytes : 0;
    double held = s->checkpoint ? g->in_bytes + extra : g->act_bytes;
    double keep = g->w_bytes < held ? g->w_bytes : held;
    int split = L->has_w[a->chunk * s->m + a->mb];
    double secs, mem;
    switch (a->kind) {
    case PROG_F:
        secs = g->fwd;
        /* inference keeps nothing for a backward */
        mem = L->fwd_only ? 0 : s->checkpoint ? g->in_bytes : g->act_bytes;
        break;
    case PROG_R:
        secs = g->recompute;
        mem = extra;
        break;
    case PROG_W:
        secs = g->wgt;
        mem = -keep;
        break;
    default:
        secs = split ? g->bwd : g->bwd + g->wgt;
        mem = split ? -(held - keep) : -held;
    }
    return prog_compute((enum prog_kind)a->kind, st, a->chunk, a->mb, secs,
                        mem);
}

static int same_unit(const sched_action *a, const sched_action *b)
{
    return a->chunk == b->chunk && a->mb == b->mb;
}

/* One lane. The order is cut into steps (one action, or a few joined ones);
 * before each step one batch holds the sends of the previous step's actions
 * and the receives of this step's, after the last step its sends: Megatron's
 * send_forward_recv_backward and friends. A B joins the R right before it:
 * Megatron receives the gradient before backward_step, which is where the
 * recompute runs. A step has at most F, R, B: two sends, two receives. */
static int lower_rank(lower *L, const sched_action *acts, uint8_t *join,
                      int32_t n)
{
    int32_t lane = prog_add_lane(L->ps, cluster_rank(L->s, L->r));
    if (lane < 0)
        return -1;
    memset(L->has_w, 0, (size_t)L->s->m * (size_t)L->s->v);
    for (int32_t i = 0; i < n; i++)
        if (acts[i].kind == PROG_W)
            L->has_w[acts[i].chunk * L->s->m + acts[i].mb] = 1;
    for (int32_t i = 1; i < n; i++)
        if (acts[i].kind == PROG_B && acts[i - 1].kind == PROG_R &&
            same_unit(&acts[i], &acts[i - 1]))
            join[i] = 1;
    int32_t prev = 0, i = 0; /* previous step: acts[prev .. i) */
    for (;;) {
        int32_t end = i + (i < n);
        while (end < n && join[end])
            end++;
        prog_op batch[6];
        int k = 0;
        for (int32_t j = prev; j < i; j++)
            k += transfer(L, &acts[j], 1, &batch[k]);
        int sends = k;
        for (int32_t j = i; j < end; j++)
            k += transfer(L, &acts[j], 0, &batch[k]);
        assert(k <= 4);
        /* Megatron's 1F1B pairs a send with a receive only when the kind
         * changes (send_forward_recv_backward, send_backward_recv_forward);
         * between two forwards (warm-up) or two backwards (cool-down) it
         * calls send_forward / recv_forward (send_backward / recv_backward)
         * one after the other, each waited on alone. */
        int separate = L->s->kind == SCHED_1F1B && i > 0 && i < n &&
                       acts[i - 1].kind == acts[end - 1].kind;
        if (separate && sends > 0 && sends < k) {
            if (push_batch(L, lane, batch, sends) ||
                push_batch(L, lane, batch + sends, k - sends))
                return -1;
        } else if (push_batch(L, lane, batch, k)) {
            return -1;
        }
        if (i == n)
            return 0;
        for (int32_t j = i; j < end; j++) {
            prog_op op = compute(L, &acts[j]);
            if (prog_push(L->ps, lane, &op))
                return -1;
        }
        prev = i;
        i = end;
    }
}

/* Validates everything before appending, so that a failure other than out
 * of memory leaves ps untouched. */
int sched_lower(const sched_spec *s, prog_set *ps, ps_err *err)
{
    if (sched_check(s, err))
        return PS_ERR;
    for (int32_t r = 0; r < s->p; r++) {
        int32_t c = cluster_rank(s, r);
        if (c < 0 || c >= ps->nranks)
            return ps_errf(err,
                           "pipeline rank %d maps to rank %d outside 0..%d",
                           (int)r, (int)c, (int)ps->nranks - 1);
        for (int32_t q = 0; q < r; q++)
            if (cluster_rank(s, q) == c)
                return ps_errf(err,
                               "pipeline ranks %d and %d both map to rank %d",
                               (int)q, (int)r, (int)c);
    }
    int32_t S = s->p * s->v;
    int64_t nmsg = s->p > 1 ? 2 * (int64_t)(S - 1) * s->m : 0;
    if ((int64_t)ps->nmsgs + nmsg > INT32_MAX)
        return ps_errf(err, "too many messages (%lld)",
                       (long long)(ps->nmsgs + nmsg));
    int32_t max = 4 * s->m * s->v;
    sched_action *acts = malloc((size_t)max * sizeof *acts);
    uint8_t *join = malloc((size_t)max);
    uint8_t *has_w = malloc((size_t)s->m * (size_t)s->v);
    if (!acts || !join || !has_w) {
        free(acts);
        free(join);
        free(has_w);
        return ps_errf(err, "out of memory lowering the schedule");
    }
    sched_action *zb = NULL;
    if (s->kind == SCHED_ZB_H1 || s->kind == SCHED_ZB_H2) {
        zb = malloc((size_t)3 * s->m * (size_t)s->p * sizeof *zb);
        int zrc = zb ? sched_zb_orders(s, zb) : -1;
        if (zrc) {
            free(acts);
            free(join);
            free(has_w);
            free(zb);
            return order_error(s, 0, zrc, err);
        }
    }
    lower L = {s, ps, ps->nmsgs, 0, sched_async(s), fwd_only(s), has_w};
    ps->nmsgs += (int32_t)nmsg;
    int rc = PS_OK;
    for (int32_t r = 0; r < s->p && rc == PS_OK; r++) {
        order o = {
            acts, join, 0, max, s->checkpoint, NULL, s->m, builtin_split(s),
            zb};
        L.r = r;
        int orc = order_rank(s, r, &o);
        if (orc)
            rc = order_error(s, r, orc, err);
        else if (lower_rank(&L, acts, join, o.n))
            rc = ps_errf(err, "out of memory lowering rank %d", (int)r);
    }
    free(acts);
    free(join);
    free(has_w);
    free(zb);
    return rc;
}
