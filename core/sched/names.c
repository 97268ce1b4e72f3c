/* Schedules' names and PyTorch's aliases, action strings ("F3", "B3.c1",
 * "FB3/1.c1") both ways, and the facts of a kind that the checks and the
 * orders both read (default placement, overlapped F&B). Below sched.c and
 * check.c, which both call it. */
#include "sched/impl.h"
#include "sched/sched.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *const names[] = {
    "gpipe",          "1f1b",  "interleaved",  "custom",
    "zb_h1",          "zb_h2", "looped_bfs",   "interleaved_pytorch",
    "interleaved_zb", "zbv",   "forward_only", "dualpipev",
    "dualpipe"};
#define NKINDS ((int)(sizeof names / sizeof names[0]))

int sched_known_kind(enum sched_kind kind)
{
    return (unsigned)kind < NKINDS;
}

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
    return ps_errf(
        err,
        "unknown schedule '%s' (expected gpipe, afab, 1f1b, "
        "interleaved, zb_h1, zb_h2, looped_bfs, "
        "interleaved_pytorch, interleaved_zb, zbv, dualpipev, dualpipe, "
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
    return kind == SCHED_ZBV || kind == SCHED_DUALPIPEV ? SCHED_V
           : kind == SCHED_DUALPIPE                     ? SCHED_DUAL
                                                        : SCHED_LOOP;
}

static void unit_str(char k, int32_t chunk, int32_t mb, char *buf, size_t size)
{
    if (chunk > 0)
        snprintf(buf, size, "%c%d.c%d", k, (int)mb, (int)chunk);
    else
        snprintf(buf, size, "%c%d", k, (int)mb);
}

/* "F3" or "B3.c1" (the chunk only when nonzero, as prog_describe), FB as
 * "FB3/1.c1" (F of 3, chunk 0, with B of 1, chunk 1). */
void sched_action_str(const sched_action *a, char *buf, size_t size)
{
    if (a->kind != SCHED_FB) {
        unit_str(prog_kind_letter((enum prog_kind)a->kind), a->chunk, a->mb,
                 buf, size);
        return;
    }
    char f[24], b[24];
    unit_str('B', a->chunk, a->mb, f, sizeof f);
    unit_str('/', a->bchunk, a->bmb, b, sizeof b);
    snprintf(buf, size, "F%s%s", f, b);
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

/* A microbatch and an optional ".c<chunk>" at *p, checked against m and v;
 * what names the part ("F", "B") in messages. */
static int read_unit(const char *text, const char **p, char what, int32_t m,
                     int32_t v, int16_t *chunk, int32_t *mb, ps_err *err)
{
    long n = read_num(p), c = 0;
    if (n < 0)
        return ps_errf(err, "bad action '%s': expected a microbatch after %c",
                       text, what);
    if ((*p)[0] == '.' && (*p)[1] == 'c') {
        *p += 2;
        c = read_num(p);
        if (c < 0)
            return ps_errf(err, "bad action '%s': expected a chunk after .c",
                           text);
    }
    /* the bounds in long: m - 1 must not overflow for any int32 m */
    if (n >= m)
        return ps_errf(err, "action '%s': microbatch %ld out of range 0..%ld",
                       text, n, (long)m - 1);
    if (c >= v || c > INT16_MAX)
        return ps_errf(err, "action '%s': chunk %ld out of range 0..%ld", text,
                       c, (long)v - 1);
    *chunk = (int16_t)c;
    *mb = (int32_t)n;
    return PS_OK;
}

int sched_parse_action(const char *text, int32_t m, int32_t v,
                       sched_action *out, ps_err *err)
{
    const char *p = text ? text : "";
    sched_action a = {0};
    switch (*p) {
    case 'F': a.kind = p[1] == 'B' ? SCHED_FB : PROG_F; break;
    case 'B': a.kind = PROG_B; break;
    case 'R': a.kind = PROG_R; break;
    case 'W': a.kind = PROG_W; break;
    default:
        return ps_errf(err,
                       "bad action '%s': expected F, B, W, R or FB, a "
                       "microbatch and optionally a chunk, as in F3, B0.c1 "
                       "or FB3/1",
                       p);
    }
    p += a.kind == SCHED_FB ? 2 : 1;
    if (read_unit(text, &p, a.kind == SCHED_FB ? 'B' : text[0], m, v, &a.chunk,
                  &a.mb, err))
        return PS_ERR;
    if (a.kind == SCHED_FB) {
        if (*p != '/')
            return ps_errf(err,
                           "bad action '%s': expected '/' and the backward's "
                           "microbatch, as in FB3/1",
                           text);
        p++;
        if (read_unit(text, &p, '/', m, v, &a.bchunk, &a.bmb, err))
            return PS_ERR;
    }
    if (*p)
        return ps_errf(err, "bad action '%s': unexpected '%s'", text, p);
    *out = a;
    return PS_OK;
}

int sched_overlaps(const sched_spec *s)
{
    if (s->kind == SCHED_DUALPIPEV || s->kind == SCHED_DUALPIPE)
        return 1;
    if (s->kind != SCHED_CUSTOM || !s->custom || !s->ncustom)
        return 0;
    for (int32_t r = 0; r < s->p; r++)
        for (int32_t i = 0; s->custom[r] && i < s->ncustom[r]; i++)
            if (s->custom[r][i].kind == SCHED_FB)
                return 1;
    return 0;
}
