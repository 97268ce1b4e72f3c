/* Which data-parallel replicas of a loaded run ran the drawn replica's
 * timeline exactly (out/export_run.h, export_run_same_replicas): the
 * exports fold those into the drawn replica's rows and say so, so that
 * one replica's rows stand for the run only where that is true. Replica
 * j's p-th simulated rank (in rank order) is compared with the drawn
 * replica's p-th: the same events (kind, stage, chunk, microbatch, start
 * and end) and, as their source, the same transfers (kind, bytes,
 * microbatch, tag, start and end; the peers differ by the replica's
 * shift), times within 1e-9 of the makespan. Linear in the rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out/export_run.h"

int32_t export_run_rank_index(const export_run *r, int32_t rank)
{
    int32_t lo = 0, hi = r->nranks;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (r->ranks[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->nranks && r->ranks[lo].rank == rank ? lo : -1;
}

/* Per rank index i: its events r->ev[ev_at[i] .. ev_at[i+1]) and the
 * transfers it sends, r->tr[tr_of[tr_at[i] .. tr_at[i+1])] in start
 * order; member[j * per + p]: replica j's p-th rank index. */
typedef struct fold_index {
    int32_t *ev_at, *tr_at, *tr_of, *member;
    int32_t per; /* simulated ranks a replica */
    double tol;  /* times within this are the same */
} fold_index;

static void index_free(fold_index *x)
{
    free(x->ev_at);
    free(x->tr_at);
    free(x->tr_of);
    free(x->member);
}

/* Builds x; 0 when replicas cannot be compared (a rank of no replica,
 * replicas of unequal size) or memory ran out. */
static int index_build(const export_run *r, fold_index *x)
{
    int32_t n = r->nranks, reps = r->replicas;
    memset(x, 0, sizeof *x);
    if (reps < 2 || n < reps || n % reps != 0)
        return 0;
    x->per = n / reps;
    x->tol = 1e-9 * (r->makespan > 0 ? r->makespan : 1);
    x->ev_at = calloc((size_t)n + 1, sizeof *x->ev_at);
    x->tr_at = calloc((size_t)n + 1, sizeof *x->tr_at);
    x->tr_of = malloc(((size_t)r->ntr + 1) * sizeof *x->tr_of);
    x->member = malloc((size_t)n * sizeof *x->member);
    int32_t *fill = calloc((size_t)reps, sizeof *fill);
    int ok = x->ev_at && x->tr_at && x->tr_of && x->member && fill;
    for (int32_t i = 0; ok && i < n; i++) { /* replicas' ranks, in order */
        int32_t j = r->ranks[i].replica;
        ok = j >= 0 && j < reps && fill[j] < x->per;
        if (ok)
            x->member[j * x->per + fill[j]++] = i;
    }
    free(fill);
    for (int32_t e = 0, i = 0; ok && i < n; i++) { /* events by rank */
        x->ev_at[i] = e;
        while (e < r->nev && r->ev[e].rank == r->ranks[i].rank)
            e++;
        x->ev_at[i + 1] = e;
    }
    for (int32_t t = 0; ok && t < r->ntr; t++) { /* a counting sort */
        int32_t i = export_run_rank_index(r, r->tr[t].src);
        if (i >= 0)
            x->tr_at[i + 1]++;
    }
    for (int32_t i = 0; ok && i < n; i++)
        x->tr_at[i + 1] += x->tr_at[i];
    int32_t *next = ok ? malloc(((size_t)n + 1) * sizeof *next) : NULL;
    ok = ok && next;
    if (ok) {
        memcpy(next, x->tr_at, (size_t)n * sizeof *next);
        for (int32_t t = 0; t < r->ntr; t++) {
            int32_t i = export_run_rank_index(r, r->tr[t].src);
            if (i >= 0)
                x->tr_of[next[i]++] = t;
        }
    }
    free(next);
    if (!ok)
        index_free(x);
    return ok;
}

static int same_time(const fold_index *x, double a, double b)
{
    return fabs(a - b) <= x->tol;
}

/* Whether rank indices a and b have the same events and sends. */
static int same_rank(const export_run *r, const fold_index *x, int32_t a,
                     int32_t b)
{
    int32_t ne = x->ev_at[a + 1] - x->ev_at[a];
    int32_t nt = x->tr_at[a + 1] - x->tr_at[a];
    if (ne != x->ev_at[b + 1] - x->ev_at[b] ||
        nt != x->tr_at[b + 1] - x->tr_at[b])
        return 0;
    for (int32_t k = 0; k < ne; k++) {
        const export_event *e = &r->ev[x->ev_at[a] + k],
                           *f = &r->ev[x->ev_at[b] + k];
        if (strcmp(e->kind, f->kind) || e->stage != f->stage ||
            e->chunk != f->chunk || e->mb != f->mb ||
            !same_time(x, e->t0, f->t0) || !same_time(x, e->t1, f->t1))
            return 0;
    }
    for (int32_t k = 0; k < nt; k++) {
        const export_transfer *s = &r->tr[x->tr_of[x->tr_at[a] + k]],
                              *t = &r->tr[x->tr_of[x->tr_at[b] + k]];
        if (strcmp(s->kind, t->kind) || s->mb != t->mb || s->tag != t->tag ||
            fabs(s->bytes - t->bytes) > 1e-9 * fabs(s->bytes) ||
            !same_time(x, s->t0, t->t0) || !same_time(x, s->t1, t->t1))
            return 0;
    }
    return 1;
}

/* Appends replicas j (same[j] == want, j != drawn) as "1-7,9" to buf (n
 * bytes, at least 32), ending with ",..." where they do not fit. */
static void put_replicas(const export_run *r, const char *same, char want,
                         int drawn, char *buf, size_t n)
{
    size_t at = strlen(buf);
    int first = 1;
    for (int j = 0; j < r->replicas; j++) {
        if (j == drawn || same[j] != want)
            continue;
        if (at + 28 > n) { /* ",A-B" of two ints, and ",...", may not fit */
            snprintf(buf + at, n - at, ",...");
            return;
        }
        int k = j;
        while (k + 1 < r->replicas && k + 1 != drawn && same[k + 1] == want)
            k++;
        at += (size_t)snprintf(buf + at, n - at, first ? "%d" : ",%d", j);
        if (k > j)
            at += (size_t)snprintf(buf + at, n - at, "-%d", k);
        first = 0;
        j = k;
    }
}

int export_run_same_replicas(const export_run *r, int replica, char *buf,
                             size_t n)
{
    buf[0] = 0;
    fold_index x;
    if (!index_build(r, &x))
        return -1;
    char *same = calloc((size_t)r->replicas, 1);
    if (!same) {
        index_free(&x);
        return -1;
    }
    int count = 0;
    for (int j = 0; j < r->replicas; j++) {
        same[j] = 1;
        for (int32_t p = 0; p < x.per && same[j]; p++)
            same[j] = (char)same_rank(r, &x, x.member[replica * x.per + p],
                                      x.member[j * x.per + p]);
        count += same[j] && j != replica;
    }
    index_free(&x);
    if (count == r->replicas - 1) {
        snprintf(buf, n, "replicas ");
        put_replicas(r, same, 1, replica, buf, n);
        size_t at = strlen(buf);
        snprintf(buf + at, n - at, " identical, folded into it");
    } else if (count > 0) {
        snprintf(buf, n, "other replicas identical, folded into it: ");
        put_replicas(r, same, 1, replica, buf, n);
        size_t at = strlen(buf);
        snprintf(buf + at, n - at, "; differing: ");
        put_replicas(r, same, 0, replica, buf, n);
    } else {
        snprintf(buf, n, "every other replica differs from it");
    }
    free(same);
    return count;
}
