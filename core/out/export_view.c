/* The view of a loaded run (out/export_run.h, export_run_view): which of
 * its simulated ranks, events and transfers a reader draws, from the
 * replica (export.h's EXPORT_REPLICA_*) and the options of out/view.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out/export.h"
#include "out/export_run.h"

/* 1 when rank is one of r->ranks. */
static int drawn(const export_run *r, int32_t rank)
{
    return export_run_rank_index(r, rank) >= 0;
}

/* Keeps the ranks keep[i] marks, their events, and the transfers with an
 * end among them (marking those with both). */
static void keep_ranks(export_run *r, const char *keep)
{
    int32_t n = 0;
    for (int32_t i = 0; i < r->nranks; i++)
        if (keep[i])
            r->ranks[n++] = r->ranks[i];
    r->nranks = n;
    n = 0;
    for (int32_t i = 0; i < r->nev; i++)
        if (drawn(r, r->ev[i].rank))
            r->ev[n++] = r->ev[i];
    r->nev = n;
    n = 0;
    for (int32_t i = 0; i < r->ntr; i++) {
        export_transfer *t = &r->tr[i];
        int src = drawn(r, t->src), dst = drawn(r, t->dst);
        t->both = src && dst;
        if (src || dst)
            r->tr[n++] = *t;
    }
    r->ntr = n;
}

/* Applies view replica (export.h) to the loaded ranks; fails for a
 * replica the run does not have. */
static int choose_view(export_run *r, int replica, int auto_ranks, ps_err *err)
{
    if (replica == EXPORT_REPLICA_AUTO)
        replica =
            r->nranks > (auto_ranks > 0 ? auto_ranks : EXPORT_AUTO_RANKS) &&
                    r->replicas > 1
                ? 0
                : EXPORT_REPLICA_ALL;
    else if (replica > 0 && r->replicas < 2)
        return ps_errf(err,
                       "run %lld has one data-parallel replica (--replica 0 "
                       "or all), not %d",
                       (long long)r->id, replica);
    else if (replica >= r->replicas && r->replicas > 1)
        return ps_errf(err,
                       "run %lld has %d data-parallel replicas (0 to %d), "
                       "not %d",
                       (long long)r->id, (int)r->replicas, (int)r->replicas - 1,
                       replica);
    if (replica < 0 || r->replicas < 2)
        return PS_OK; /* every rank */
    /* before the other replicas' rows go: which of them it stands for */
    char same[120];
    if (export_run_same_replicas(r, replica, same, sizeof same) < 0)
        snprintf(same, sizeof same, "replicas not compared");
    int32_t all = r->nranks;
    char *keep = malloc((size_t)r->nranks + 1);
    if (!keep)
        return ps_errf(err, "run %lld: out of memory", (long long)r->id);
    for (int32_t i = 0; i < r->nranks; i++)
        keep[i] = r->ranks[i].replica == replica;
    keep_ranks(r, keep);
    free(keep);
    snprintf(r->view, sizeof r->view,
             "replica %d of %d (%s): %d of %d simulated ranks (--all: every "
             "rank)",
             replica, (int)r->replicas, same, (int)r->nranks, (int)all);
    return PS_OK;
}

/* The cluster ranks the drawn rows stand for, "0-7,128-135,...", for
 * messages: at most n bytes. */
static void ranks_text(const export_run *r, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < r->nranks; i++) {
        const char *l = r->ranks[i].label, *sp = strchr(l, ' ');
        l = sp ? sp + 1 : l;
        if (at + strlen(l) + 5 >= n) {
            snprintf(buf + at, n - at, ",...");
            return;
        }
        at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? "," : "", l);
    }
}

/* Whether event e is drawn: its stage among --stages (an event of no
 * stage, such as the optimizer step, goes with its rank) and its time
 * within --window. */
static int event_in_view(const out_view *v, const export_event *e)
{
    return (e->stage < 0 || view_has(&v->stages, e->stage)) &&
           view_in_window(v, e->t0, e->t1);
}

/* Applies --ranks, --stages and --window to the ranks, events and
 * transfers loaded (replica's ranks already chosen); fails when nothing
 * is left to draw. */
static int apply_view(export_run *r, const out_view *v, ps_err *err)
{
    if (!view_filters(v))
        return PS_OK;
    char given[160], had[80];
    view_describe(v, given, sizeof given);
    ranks_text(r, had, sizeof had);
    int32_t before = r->nranks, picked = 0;
    char *keep = calloc((size_t)r->nranks + 1, 1);
    if (!keep)
        return ps_errf(err, "run %lld: out of memory", (long long)r->id);
    /* a rank is drawn when picked and, with --stages, running one of them */
    int32_t e = 0;
    for (int32_t i = 0; i < r->nranks; i++) {
        int32_t rank = r->ranks[i].rank;
        int staged = v->stages.n == 0;
        while (e < r->nev && r->ev[e].rank < rank)
            e++;
        for (; e < r->nev && r->ev[e].rank == rank; e++)
            staged |=
                r->ev[e].stage >= 0 && view_has(&v->stages, r->ev[e].stage);
        picked += r->ranks[i].picked;
        keep[i] = (char)(r->ranks[i].picked && staged);
    }
    keep_ranks(r, keep);
    free(keep);
    if (picked == 0)
        return ps_errf(err,
                       "--ranks %s: run %lld draws none of them (its rows "
                       "stand for ranks %s)",
                       v->ranks_text, (long long)r->id, had);
    if (r->nranks == 0)
        return ps_errf(err,
                       "--stages %s: run %lld has no such stage among the "
                       "ranks drawn (its stages: 0 to %d)",
                       v->stages_text, (long long)r->id,
                       (int)(r->stages * (r->v > 0 ? r->v : 1)) - 1);
    int32_t n = 0;
    for (int32_t i = 0; i < r->nev; i++)
        if (event_in_view(v, &r->ev[i]))
            r->ev[n++] = r->ev[i];
    r->nev = n;
    n = 0;
    for (int32_t i = 0; i < r->ntr; i++)
        if (view_in_window(v, r->tr[i].t0, r->tr[i].t1))
            r->tr[n++] = r->tr[i];
    r->ntr = n;
    if (r->nev == 0 && r->ntr == 0)
        return ps_errf(err,
                       "%s: run %lld has nothing there (its timeline runs "
                       "from 0 to %g s)",
                       given, (long long)r->id, r->makespan);
    size_t at = strlen(r->view);
    snprintf(r->view + at, sizeof r->view - at, "%s%s: %d of %d %s",
             at ? "; " : "", given, (int)r->nranks, (int)before,
             at ? "ranks drawn" : "simulated ranks");
    return PS_OK;
}

int export_run_view(export_run *r, const out_view *v, ps_err *err)
{
    return choose_view(r, v->replica, v->auto_ranks, err) ||
                   apply_view(r, v, err)
               ? PS_ERR
               : PS_OK;
}
