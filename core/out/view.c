/* The timeline options of report, export and plot (out/view.h). */
#include "out/view.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unit.h"
#include "out/export.h"

void view_init(out_view *v)
{
    memset(v, 0, sizeof *v);
    v->replica = EXPORT_REPLICA_AUTO;
    v->t1 = INFINITY;
}

void view_free(out_view *v)
{
    free(v->ranks.r);
    free(v->stages.r);
    v->ranks.r = v->stages.r = NULL;
    v->ranks.n = v->stages.n = 0;
}

int view_is_option(const char *flag)
{
    return strcmp(flag, "--ranks") == 0 || strcmp(flag, "--stages") == 0 ||
           strcmp(flag, "--window") == 0 || strcmp(flag, "--replica") == 0;
}

/* The value as a message shows it: quoted, at most 60 bytes. */
static void shown(const char *value, char *buf, size_t n)
{
    snprintf(buf, n, "'%.60s%s'", value, strlen(value) > 60 ? "..." : "");
}

/* A number of the set at *p (digits only), advancing *p; -1 when there
 * is none or it is above VIEW_MAX. */
static int64_t number(const char **p)
{
    if (!isdigit((unsigned char)**p))
        return -1;
    int64_t x = 0;
    while (isdigit((unsigned char)**p)) {
        x = x * 10 + (**p - '0');
        if (x > VIEW_MAX)
            return -1;
        (*p)++;
    }
    return x;
}

static int cmp_range(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Parses "0-7,64" into s (sorted, overlapping ranges merged); why names
 * the first fault, for the message. */
static int parse_set(const char *text, view_set *s, const char **why)
{
    int cap = 0;
    const char *p = text;
    *why = NULL;
    for (;;) {
        int64_t lo = number(&p), hi = lo;
        if (lo >= 0 && *p == '-') {
            p++;
            hi = number(&p);
        }
        if (lo < 0 || hi < 0 || (*p && *p != ',')) {
            *why = "numbers from 0 to 16777216";
            return PS_ERR;
        }
        if (hi < lo) {
            *why = "a range runs from low to high";
            return PS_ERR;
        }
        if (s->n == cap) {
            cap = cap ? 2 * cap : 8;
            void *r = realloc(s->r, (size_t)cap * sizeof *s->r);
            if (!r) {
                *why = "out of memory";
                return PS_ERR;
            }
            s->r = r;
        }
        s->r[s->n][0] = lo;
        s->r[s->n][1] = hi;
        s->n++;
        if (!*p)
            break;
        p++; /* the comma */
    }
    qsort(s->r, (size_t)s->n, sizeof *s->r, cmp_range);
    int m = 0;
    for (int i = 1; i < s->n; i++) {
        if (s->r[i][0] <= s->r[m][1] + 1) {
            if (s->r[i][1] > s->r[m][1])
                s->r[m][1] = s->r[i][1];
        } else {
            m++;
            s->r[m][0] = s->r[i][0];
            s->r[m][1] = s->r[i][1];
        }
    }
    s->n = m + 1;
    return PS_OK;
}

/* One side of a window: empty (def), or a time with units. */
static int parse_time(const char *text, size_t len, double def, double *t)
{
    if (len == 0) {
        *t = def;
        return PS_OK;
    }
    char buf[64];
    if (len >= sizeof buf)
        return PS_ERR;
    memcpy(buf, text, len);
    buf[len] = 0;
    return unit_parse(buf, UNIT_SECONDS, t, NULL) == 0 && isfinite(*t) &&
                   *t >= 0
               ? PS_OK
               : PS_ERR;
}

static int parse_window(out_view *v, const char *value, ps_err *err)
{
    char q[80];
    shown(value, q, sizeof q);
    const char *colon = strchr(value, ':');
    if (!colon || strchr(colon + 1, ':'))
        return ps_errf(err,
                       "--window: expected START:END in seconds, such as "
                       "0:1.5 or 2ms:3ms (either side may be left out), "
                       "got %s",
                       q);
    double t0, t1;
    if (parse_time(value, (size_t)(colon - value), 0, &t0) ||
        parse_time(colon + 1, strlen(colon + 1), INFINITY, &t1))
        return ps_errf(err,
                       "--window: expected START:END, each a time of 0 or "
                       "more such as 1.5, 250us or 2 ms, got %s",
                       q);
    if (!(t1 > t0))
        return ps_errf(err, "--window: END must be after START, got %s", q);
    v->t0 = t0;
    v->t1 = t1;
    v->windowed = 1;
    v->window_text = value;
    return PS_OK;
}

static int parse_replica(out_view *v, const char *value, ps_err *err)
{
    if (v->replica_set) { /* nothing silent: the second would win */
        char q[80], had[16] = "all";
        shown(value, q, sizeof q);
        if (v->replica >= 0)
            snprintf(had, sizeof had, "%d", v->replica);
        return ps_errf(err,
                       "--replica: given twice (--all is --replica all), "
                       "%s after '%s'; give one",
                       q, had);
    }
    if (strcmp(value, "all") == 0) {
        v->replica = EXPORT_REPLICA_ALL;
    } else {
        const char *p = value;
        int64_t k = number(&p);
        if (k < 0 || *p || k > VIEW_MAX) {
            char q[80];
            shown(value, q, sizeof q);
            return ps_errf(err,
                           "--replica: expected a replica number (0, 1, "
                           "...) or all, got %s",
                           q);
        }
        v->replica = (int)k;
    }
    v->replica_set = 1;
    return PS_OK;
}

int view_option(out_view *v, const char *flag, const char *value, ps_err *err)
{
    if (strcmp(flag, "--window") == 0)
        return parse_window(v, value, err);
    if (strcmp(flag, "--replica") == 0)
        return parse_replica(v, value, err);
    int ranks = strcmp(flag, "--ranks") == 0;
    view_set *s = ranks ? &v->ranks : &v->stages;
    s->n = 0;
    const char *why;
    if (parse_set(value, s, &why)) {
        char q[80];
        shown(value, q, sizeof q);
        s->n = 0;
        return ps_errf(err,
                       "%s: expected %s numbers and ranges such as %s, got "
                       "%s (%s)",
                       flag, ranks ? "rank" : "stage",
                       ranks ? "0-7,64" : "0,2-3", q, why);
    }
    if (ranks)
        v->ranks_text = value;
    else
        v->stages_text = value;
    return PS_OK;
}

int view_has(const view_set *s, int64_t x)
{
    if (s->n == 0)
        return 1;
    int lo = 0, hi = s->n;
    while (lo < hi) { /* the first range ending at or after x */
        int mid = lo + (hi - lo) / 2;
        if (s->r[mid][1] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && s->r[lo][0] <= x;
}

int view_in_window(const out_view *v, double t0, double t1)
{
    return !v->windowed || (t1 >= v->t0 && t0 <= v->t1);
}

int view_filters(const out_view *v)
{
    return v->ranks.n > 0 || v->stages.n > 0 || v->windowed;
}

void view_describe(const out_view *v, char *buf, int n)
{
    int at = 0;
    buf[0] = 0;
    const char *flags[] = {"--ranks", "--stages", "--window"};
    const char *texts[] = {v->ranks_text, v->stages_text, v->window_text};
    for (int i = 0; i < 3 && at < n; i++)
        if (texts[i])
            at += snprintf(buf + at, (size_t)(n - at), "%s%s %s", at ? " " : "",
                           flags[i], texts[i]);
}
