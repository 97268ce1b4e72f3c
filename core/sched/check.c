/* Checks of schedule specs: sizes, placements, the constraints of each
 * named schedule, and custom action lists (every F and B of every unit
 * once, a W after its B, an FB's two halves). Used by sched/sched.c's
 * sched_order and by sched/lower.c before anything is built. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/impl.h"
#include "sched/pt.h"
#include "sched/sched.h"

static int bad_cost(double x)
{
    return !(x >= 0) || !isfinite(x);
}

/* Inference: the forward-only schedule, or custom lists without any
 * backward (DeepSpeed's InferenceSchedule runs forwards only). */
int sched_fwd_only(const sched_spec *s)
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

/* One F, B, R or W of (chunk, mb) in rank r's list; `text` names the
 * action it belongs to (an FB for its halves). seen: see check_custom. */
static int check_part(const sched_spec *s, int32_t r, uint8_t *seen,
                      uint8_t kind, int32_t chunk, int32_t mb, const char *text,
                      ps_err *err)
{
    int32_t mv = s->m * s->v, id = chunk * s->m + mb;
    uint8_t *f = &seen[id], *bk = &seen[mv + id], *rc = &seen[2 * mv + id];
    uint8_t *wg = &seen[3 * mv + id];
    char b[48];
    sched_action fa = {.kind = PROG_F, .chunk = (int16_t)chunk, .mb = mb};
    sched_action_str(&fa, b, sizeof b);
    if (kind == PROG_R && !s->checkpoint)
        return ps_errf(err, "rank %d: %s needs checkpointing", (int)r, text);
    uint8_t *mine = kind == PROG_F   ? f
                    : kind == PROG_B ? bk
                    : kind == PROG_R ? rc
                                     : wg;
    if (*mine) {
        if (strchr(text, '/')) { /* say which half of the FB repeats */
            fa.kind = kind;
            sched_action_str(&fa, b, sizeof b);
            return ps_errf(err, "rank %d: %s repeats %s", (int)r, text, b);
        }
        return ps_errf(err, "rank %d: %s appears twice", (int)r, text);
    }
    *mine = 1;
    if (kind != PROG_F && !*f)
        return ps_errf(err, "rank %d: %s comes before %s", (int)r, text, b);
    if (kind == PROG_W && !*bk) {
        fa.kind = PROG_B;
        sched_action_str(&fa, b, sizeof b);
        return ps_errf(err, "rank %d: %s comes before %s", (int)r, text, b);
    }
    if (kind == PROG_R && *bk) {
        fa.kind = PROG_B;
        sched_action_str(&fa, b, sizeof b);
        return ps_errf(err, "rank %d: %s comes after %s", (int)r, text, b);
    }
    return PS_OK;
}

static int in_range(const sched_spec *s, int32_t chunk, int32_t mb)
{
    return chunk >= 0 && chunk < s->v && mb >= 0 && mb < s->m;
}

/* Checks one custom list. seen has 4 * m * v bytes (F, B, R, W marks). */
static int check_custom(const sched_spec *s, int32_t r, uint8_t *seen,
                        ps_err *err)
{
    int32_t mv = s->m * s->v;
    char a[48];
    memset(seen, 0, (size_t)mv * 4);
    for (int32_t i = 0; i < s->ncustom[r]; i++) {
        const sched_action *x = &s->custom[r][i];
        int fb = x->kind == SCHED_FB;
        if (x->kind != PROG_F && x->kind != PROG_B && x->kind != PROG_R &&
            x->kind != PROG_W && !fb)
            return ps_errf(err,
                           "rank %d: action %d has kind %d, not F, B, W, R "
                           "or FB",
                           (int)r, (int)i, (int)x->kind);
        if (!in_range(s, x->chunk, x->mb) ||
            (fb && !in_range(s, x->bchunk, x->bmb)))
            return ps_errf(
                err,
                "rank %d: action %d (chunk %d, microbatch %d) out "
                "of range (%d chunks, %d microbatches)",
                (int)r, (int)i,
                (int)(fb && in_range(s, x->chunk, x->mb) ? x->bchunk
                                                         : x->chunk),
                (int)(fb && in_range(s, x->chunk, x->mb) ? x->bmb : x->mb),
                (int)s->v, (int)s->m);
        sched_action_str(x, a, sizeof a);
        /* DualPipe overlaps the forward of one microbatch with the
         * backward of another: a unit's backward needs its own forward's
         * output, so the two cannot run at once */
        if (fb && x->chunk == x->bchunk && x->mb == x->bmb)
            return ps_errf(err,
                           "rank %d: %s overlaps the forward and the backward "
                           "of one microbatch, which cannot run at once",
                           (int)r, a);
        int rc = check_part(s, r, seen, fb ? PROG_F : x->kind, x->chunk, x->mb,
                            a, err);
        if (rc == PS_OK && fb)
            rc = check_part(s, r, seen, PROG_B, x->bchunk, x->bmb, a, err);
        if (rc)
            return rc;
    }
    for (int32_t id = 0; id < (sched_fwd_only(s) ? 1 : 2) * mv; id++) {
        if (seen[id])
            continue;
        sched_action miss = {.kind = id < mv ? PROG_F : PROG_B,
                             .chunk = (int16_t)(id % mv / s->m),
                             .mb = id % s->m};
        sched_action_str(&miss, a, sizeof a);
        return ps_errf(err, "rank %d: %s is missing", (int)r, a);
    }
    return PS_OK;
}

int32_t sched_place_rank(enum sched_placement pl, const int32_t *place,
                         int32_t p, int32_t s)
{
    if (pl == SCHED_LIST)
        return place[2 * s];
    if (pl == SCHED_DUAL)
        return s;
    return sched_rank_of(pl, p, s);
}

int32_t sched_place_chunk(enum sched_placement pl, const int32_t *place,
                          int32_t p, int32_t s)
{
    return pl == SCHED_LIST ? place[2 * s + 1] : pl == SCHED_DUAL ? 0 : s / p;
}

int32_t sched_place_stage(enum sched_placement pl, const int32_t *place,
                          int32_t p, int32_t v, int32_t chunk, int32_t rank)
{
    if (pl == SCHED_DUAL)
        return chunk == 0 ? rank : p - 1 - rank;
    if (pl != SCHED_LIST)
        return sched_stage_of(pl, p, chunk, rank);
    for (int32_t s = 0; s < p * v; s++)
        if (place[2 * s] == rank && place[2 * s + 1] == chunk)
            return s;
    return -1;
}

/* Does the list equal rule (LOOP, or V with 2 chunks) everywhere? */
static int32_t first_difference(const int32_t *place, int32_t p, int32_t v,
                                enum sched_placement rule)
{
    for (int32_t s = 0; s < p * v; s++)
        if (place[2 * s] != sched_rank_of(rule, p, s) ||
            place[2 * s + 1] != s / p)
            return s;
    return -1;
}

int sched_place_check(const int32_t *place, int32_t p, int32_t v,
                      enum sched_placement *rule, ps_err *err)
{
    int32_t S = p * v;
    uint8_t *used = calloc((size_t)S, 1);
    if (!used)
        return ps_errf(err, "out of memory checking chunk_placement");
    for (int32_t s = 0; s < S; s++) {
        int32_t r = place[2 * s], c = place[2 * s + 1];
        if (r < 0 || r >= p || c < 0 || c >= v) {
            free(used);
            return ps_errf(err,
                           "stage %d on rank %d chunk %d, outside ranks "
                           "0..%d and chunks 0..%d",
                           (int)s, (int)r, (int)c, (int)p - 1, (int)v - 1);
        }
        if (used[r * v + c]++) {
            free(used);
            return ps_errf(
                err,
                "stage %d on rank %d chunk %d, which stage %d "
                "holds already",
                (int)s, (int)r, (int)c,
                (int)sched_place_stage(SCHED_LIST, place, p, v, c, r));
        }
    }
    free(used);
    *rule = first_difference(place, p, v, SCHED_LOOP) < 0          ? SCHED_LOOP
            : v == 2 && first_difference(place, p, v, SCHED_V) < 0 ? SCHED_V
                                                                   : SCHED_LIST;
    return PS_OK;
}

/* An explicit list against the placement the schedule needs (custom
 * orders take any): names the first stage placed otherwise. */
static int check_list(const sched_spec *s, ps_err *err)
{
    enum sched_placement rule;
    if (sched_place_check(s->place, s->p, s->v, &rule, err)) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return ps_errf(err, "chunk_placement: %s", why);
    }
    if (rule != s->placement)
        return ps_errf(err,
                       "chunk_placement list is %s, but placement %d "
                       "was given with it",
                       rule == SCHED_LIST ? "explicit" : "a rule",
                       (int)s->placement);
    enum sched_placement need = sched_default_placement(s->kind);
    if (s->kind == SCHED_CUSTOM || rule == need)
        return PS_OK;
    if (need == SCHED_V && s->v != 2)
        return PS_OK; /* the chunk count error below says more */
    int32_t st = first_difference(s->place, s->p, s->v, need);
    return ps_errf(err,
                   "%s schedule needs chunk_placement '%s', but the list "
                   "places stage %d on rank %d chunk %d ('%s' has it on "
                   "rank %d chunk %d)",
                   sched_name(s->kind), need == SCHED_V ? "v" : "loop", (int)st,
                   (int)s->place[2 * st], (int)s->place[2 * st + 1],
                   need == SCHED_V ? "v" : "loop",
                   (int)sched_rank_of(need, s->p, st), (int)(st / s->p));
}

/* The sizes and the kind: what every later check takes for granted. */
static int check_shape(const sched_spec *s, ps_err *err)
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
    if (!sched_known_kind(s->kind))
        return ps_errf(err, "unknown schedule kind %d", (int)s->kind);
    if (s->v > 1 && (s->kind == SCHED_GPIPE || s->kind == SCHED_1F1B ||
                     s->kind == SCHED_ZB_H1 || s->kind == SCHED_ZB_H2 ||
                     s->kind == SCHED_FORWARD_ONLY))
        return ps_errf(err,
                       "%s schedule runs one chunk per rank (got %d); use "
                       "interleaved or a custom schedule",
                       sched_name(s->kind), (int)s->v);
    return PS_OK;
}

/* Where chunks live: the rule or list against what the schedule needs
 * (DualPipe's two ranks per stage, the V of ZBV and DualPipeV). */
static int check_placement(const sched_spec *s, ps_err *err)
{
    if (s->placement == SCHED_V && s->v != 2)
        return ps_errf(err,
                       "chunk_placement 'v' needs 2 chunks per rank "
                       "(virtual_stages 2), got %d",
                       (int)s->v);
    if ((unsigned)s->placement > SCHED_DUAL)
        return ps_errf(err, "unknown chunk placement %d", (int)s->placement);
    /* DualPipe.step: assert num_ranks % 2 == 0, num_chunks % 2 == 0 and
     * num_chunks >= num_ranks * 2 */
    if ((s->kind == SCHED_DUALPIPE) != (s->placement == SCHED_DUAL))
        return ps_errf(err, s->kind == SCHED_DUALPIPE
                                ? "dualpipe schedule places each stage on two "
                                  "ranks (leave chunk_placement out)"
                                : "the DualPipe placement serves only the "
                                  "dualpipe schedule");
    if (s->kind == SCHED_DUALPIPE && (s->p % 2 || s->v != 2))
        return ps_errf(err,
                       "dualpipe schedule needs an even number of stages "
                       "and 2 chunks per rank, got %d stages, %d chunks",
                       (int)s->p, (int)s->v);
    if (s->kind == SCHED_DUALPIPE && (s->m % 2 || s->m < 2 * s->p))
        return ps_errf(err,
                       "dualpipe schedule needs an even number of "
                       "microbatches, at least twice the stages (%d), got "
                       "%d, as DeepSeek's DualPipe asserts",
                       (int)(2 * s->p), (int)s->m);
    if (s->placement == SCHED_LIST && !s->place)
        return ps_errf(err, "chunk_placement list missing");
    if (s->place && check_list(s, err))
        return PS_ERR;
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
    return PS_OK;
}

/* The counts an order can be built for: its size, and the microbatch
 * multiples Megatron-LM's and PyTorch's interleaved orders need. */
static int check_rounds(const sched_spec *s, ps_err *err)
{
    if ((double)s->p * s->v * s->m * 4 > SCHED_MAX_ACTIONS)
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
    return PS_OK;
}

/* overlap_fb and fb_interference: in range, and given only where the
 * schedule has FB actions to time. */
static int check_fb(const sched_spec *s, ps_err *err)
{
    if (s->fb_given && (!(s->overlap_fb >= 0) || !isfinite(s->overlap_fb)))
        return ps_errf(err, "overlap_fb must be a finite time >= 0 (got %g)",
                       s->overlap_fb);
    if (s->fb_given && !(s->fb_interference >= 0 && s->fb_interference <= 1))
        return ps_errf(err, "fb_interference must be in 0..1 (got %g)",
                       s->fb_interference);
    /* only a schedule with FB actions has anything to overlap */
    if (s->fb_given && !sched_overlaps(s))
        return ps_errf(err,
                       "overlap_fb / fb_interference: the %s schedule has no "
                       "overlapped FB actions to time (dualpipev and custom "
                       "lists with FB have)",
                       sched_name(s->kind));
    return PS_OK;
}

/* Every stage's costs finite and >= 0, named by the layer fields they
 * are summed from. */
static int check_costs(const sched_spec *s, ps_err *err)
{
    if (!s->stages)
        return ps_errf(err, "no stage costs given");
    for (int32_t i = 0; i < sched_nstages(s->placement, s->p, s->v); i++) {
        const sched_stage *st = &s->stages[i];
        /* named with the layer fields they come from (issue 27 item 15:
         * fwd_time = 1e308 made a backward of inf s) */
        const struct {
            double v;
            const char *what, *from;
        } cost[] = {
            {st->fwd, "forward time", "fwd_time (or FLOPs)"},
            {st->bwd, "backward time",
             "bwd_time, or 2 x fwd_time where bwd_time is not given"},
            {st->recompute, "recompute time", "fwd_time"},
            {st->wgt, "weight-gradient time", "bwd_time"},
            {st->act_bytes, "activation bytes", "act_bytes"},
            {st->in_bytes, "input bytes", "out_bytes"},
            {st->out_bytes, "output bytes", "out_bytes"},
            {st->w_bytes, "weight-gradient bytes", "act_bytes"},
        };
        for (size_t k = 0; k < sizeof cost / sizeof cost[0]; k++)
            if (bad_cost(cost[k].v))
                return ps_errf(err,
                               "stage %d: its %s is %g, not a finite number "
                               ">= 0 (the sum of its layers' %s)",
                               (int)i, cost[k].what, cost[k].v, cost[k].from);
    }
    return PS_OK;
}

/* A custom schedule's action lists, one rank at a time. */
static int check_custom_lists(const sched_spec *s, ps_err *err)
{
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

/* Checks in the order a reader fixes them: shape, placement, counts, the
 * overlap settings, stage costs, then a custom schedule's actions; the
 * first failure is the one reported. */
int sched_check(const sched_spec *s, ps_err *err)
{
    if (check_shape(s, err) || check_placement(s, err) ||
        check_rounds(s, err) || check_fb(s, err) || check_costs(s, err))
        return PS_ERR;
    if (s->kind != SCHED_CUSTOM)
        return PS_OK;
    return check_custom_lists(s, err);
}
