/* Fault plans: checking a scenario's fault list, the per-rank table the
 * engine reads, and the words error messages use for faults. Nothing here
 * runs per event; the engine's per-op helpers are inline in sim/fault.h. */
#include "sim/fault.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/unit.h"

void fault_format_time(double seconds, int fixed, char *buf, int size)
{
    double a = fabs(seconds), v = seconds;
    const char *unit = "s";
    if (a == 0) {
        unit = fixed ? "ms" : "s";
    } else if (a < 1e-6) {
        v = seconds * 1e9;
        unit = "ns";
    } else if (a < 1e-3) {
        v = seconds * 1e6;
        unit = "us";
    } else if (a < 1) {
        v = seconds * 1e3;
        unit = "ms";
    }
    snprintf(buf, (size_t)size, fixed ? "%.3f %s" : "%.6g %s", v, unit);
}

int fault_parse_time(const char *text, size_t len, double *t, ps_err *err)
{
    const char *s = text, *end = text + len;
    while (s < end && isspace((unsigned char)*s))
        s++;
    if (end - s > 3 && s[0] == 'a' && s[1] == 't' &&
        isspace((unsigned char)s[2]))
        s += 3;
    if (unit_parse_len(s, (size_t)(end - s), UNIT_SECONDS, t, err))
        return PS_ERR;
    if (!(*t >= 0))
        return ps_errf(err, "a fault time must not be negative, got '%s'",
                       text);
    return PS_OK;
}

static const char *kind_field(enum fault_kind k)
{
    return k == FAULT_STALL ? "stall" : k == FAULT_SLOW ? "slow" : "down";
}

int fault_plan_init(fault_plan *fp, const fault *list, int32_t n,
                    double recv_timeout, fault_rank *ranks, int32_t nranks,
                    ps_err *err)
{
    memset(fp, 0, sizeof *fp);
    if (!(recv_timeout > 0))
        return ps_errf(err, "field 'recv_timeout' must be a time > 0, got %g",
                       recv_timeout);
    for (int32_t r = 0; r < nranks; r++)
        ranks[r] = (fault_rank){INFINITY, INFINITY, 1, 0};
    for (int32_t i = 0; i < n; i++) {
        const fault *f = &list[i];
        const char *field = f->kind == FAULT_DOWN ? "link" : "rank";
        if (f->rank < 0 || f->rank >= nranks ||
            (f->kind == FAULT_DOWN && (f->peer < 0 || f->peer >= nranks)))
            return ps_errf(
                err,
                "field 'faults[%d].%s' must be a rank of the cluster "
                "(0..%d), got %d",
                (int)i + 1, field, (int)nranks - 1,
                (int)(f->rank < 0 || f->rank >= nranks ? f->rank : f->peer));
        if (f->kind == FAULT_DOWN && f->rank == f->peer)
            return ps_errf(err,
                           "field 'faults[%d].link' joins rank %d to itself",
                           (int)i + 1, (int)f->rank);
        if (!(f->t >= 0) || !isfinite(f->t))
            return ps_errf(
                err, "field 'faults[%d].%s' must be a time >= 0, got %g",
                (int)i + 1,
                f->kind == FAULT_SLOW ? "from" : kind_field(f->kind), f->t);
        if (f->kind == FAULT_SLOW && !(f->speed > 0 && f->speed <= 1))
            return ps_errf(err,
                           "field 'faults[%d].slow' must be in (0, 1], got "
                           "%g",
                           (int)i + 1, f->speed);
        for (int32_t j = 0; j < i; j++) {
            const fault *g = &list[j];
            int same = g->kind == f->kind &&
                       (f->kind == FAULT_DOWN
                            ? (g->rank == f->rank && g->peer == f->peer) ||
                                  (g->rank == f->peer && g->peer == f->rank)
                            : g->rank == f->rank);
            if (!same)
                continue;
            char what[48];
            if (f->kind == FAULT_DOWN)
                snprintf(what, sizeof what, "link %d-%d", (int)f->rank,
                         (int)f->peer);
            else
                snprintf(what, sizeof what, "rank %d", (int)f->rank);
            return ps_errf(err,
                           "faults[%d]: a second '%s' fault on %s (the first "
                           "is faults[%d])",
                           (int)i + 1, kind_field(f->kind), what, (int)j + 1);
        }
        fault_rank *r = &ranks[f->rank];
        switch (f->kind) {
        case FAULT_STALL: r->stall_at = f->t; break;
        case FAULT_SLOW:
            r->slow_from = f->t;
            r->speed = f->speed;
            break;
        case FAULT_DOWN:
            r->nlinks++;
            ranks[f->peer].nlinks++;
            break;
        }
    }
    fp->list = list;
    fp->n = n;
    fp->recv_timeout = recv_timeout;
    fp->rank = ranks;
    fp->nranks = nranks;
    fp->tag_label = "step";
    return PS_OK;
}

static int has_lane(const prog_set *ps, int32_t rank)
{
    for (int32_t l = 0; l < ps->nlanes; l++)
        if (ps->lanes[l].rank == rank)
            return 1;
    return 0;
}

int fault_check_ranks(const fault_plan *fp, const prog_set *ps, ps_err *err)
{
    for (int32_t i = 0; i < fp->n; i++) {
        const fault *f = &fp->list[i];
        int32_t missing = !has_lane(ps, f->rank) ? f->rank
                          : f->kind == FAULT_DOWN && !has_lane(ps, f->peer)
                              ? f->peer
                              : -1;
        if (missing >= 0)
            return ps_errf(err, "faults[%d]: rank %d takes no part in this run",
                           (int)i + 1, (int)missing);
    }
    return PS_OK;
}

int fault_describe(const fault_plan *fp, int32_t i, char *buf, int size)
{
    const fault *f = &fp->list[i];
    char t[32];
    fault_format_time(f->t, 0, t, sizeof t);
    switch (f->kind) {
    case FAULT_STALL:
        return snprintf(buf, (size_t)size, "rank %d stalled at %s",
                        (int)f->rank, t);
    case FAULT_SLOW:
        return snprintf(buf, (size_t)size,
                        "rank %d slow (%.4g%% speed) from %s", (int)f->rank,
                        100 * f->speed, t);
    default:
        return snprintf(buf, (size_t)size, "link %d-%d down at %s",
                        (int)f->rank, (int)f->peer, t);
    }
}

int fault_append_active(const fault_plan *fp, double now, char *buf, int len,
                        int size)
{
    for (int32_t i = 0; i < fp->n && len < size - 1; i++) {
        if (fp->list[i].t > now)
            continue;
        len += snprintf(buf + len, (size_t)(size - len), "; ");
        if (len < size - 1)
            len += fault_describe(fp, i, buf + len, size - len);
    }
    return len < size ? len : size - 1;
}
