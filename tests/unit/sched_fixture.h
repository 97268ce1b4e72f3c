/* Shared by the schedule tests (test_sched, test_zb, test_pt, test_ds,
 * test_fb): a built-in or custom spec over a stage array, lower a schedule
 * onto a mesh and run it, the mean bubble of the lanes, the memory peaks,
 * and a rank's order as an action string. */
#ifndef PS_TEST_SCHED_FIXTURE_H
#define PS_TEST_SCHED_FIXTURE_H

#include <stdio.h>

#include "harness.h"
#include "net/net.h"
#include "sched/sched.h"
#include "sim/eng.h"
#include "sim/mem.h"
#include "sim/prog.h"

typedef struct outcome {
    int rc;
    ps_err err;
    eng_result res;
    prog_set *ps; /* caller frees */
} outcome;

/* A built-in schedule over stages under the chunk placement given. */
static inline sched_spec spec_on(enum sched_kind kind, int p, int v, int m,
                                 sched_stage *stages,
                                 enum sched_placement placement)
{
    return (sched_spec){.kind = kind,
                        .p = p,
                        .v = v,
                        .m = m,
                        .stages = stages,
                        .placement = placement};
}

/* One action of a custom list, parsed (a parse failure counts as a failed
 * check). */
static inline sched_action act(const char *text, int m, int v)
{
    sched_action a = {0};
    ps_err err;
    CHECK_INT(sched_parse_action(text, m, v, &a, &err), 0);
    return a;
}

/* A custom schedule: lists[r] holds n[r] actions of rank r. */
static inline sched_spec custom_on(int p, int v, int m, sched_stage *stages,
                                   const sched_action **lists, const int32_t *n)
{
    return (sched_spec){.kind = SCHED_CUSTOM,
                        .p = p,
                        .v = v,
                        .m = m,
                        .stages = stages,
                        .custom = lists,
                        .ncustom = n};
}

/* Lowers s onto a mesh of p ranks (bandwidth bw, latency lat) and runs it. */
static inline outcome run_mesh(const sched_spec *s, enum eng_p2p mode,
                               double bw, double lat)
{
    outcome o = {0};
    o.ps = prog_new(s->p);
    net *nw = net_new(s->p);
    eng_sim *e = eng_new();
    o.rc = net_set_mesh(nw, bw, lat, &o.err);
    if (!o.rc)
        o.rc = sched_lower(s, o.ps, &o.err);
    if (!o.rc)
        o.rc = prog_seal(o.ps, &o.err);
    if (!o.rc)
        o.rc = eng_run(e, o.ps, nw, mode, &o.res, &o.err);
    eng_free(e);
    net_free(nw);
    return o;
}

/* The same with free communication. */
static inline outcome run_free(const sched_spec *s, enum eng_p2p mode)
{
    return run_mesh(s, mode, 1e30, 0);
}

/* Mean over lanes of (makespan - busy) / makespan. */
static inline double bubble(const prog_set *ps, double makespan)
{
    double sum = 0;
    for (int32_t l = 0; l < ps->nlanes; l++) {
        double busy = 0;
        for (int32_t i = 0; i < ps->lanes[l].n; i++)
            if (ps->lanes[l].ops[i].type == PROG_COMPUTE)
                busy += ps->lanes[l].ops[i].seconds;
        sum += (makespan - busy) / makespan;
    }
    return sum / ps->nlanes;
}

/* Runs s on free links and writes each rank's memory peaks (static memory
 * 0) to out; checks that the run succeeds and every rank ends at 0. */
static inline void peaks(const sched_spec *s, mem_rank *out)
{
    outcome o = run_free(s, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    ps_err err;
    CHECK_INT(mem_ledger(o.ps, NULL, out, NULL, NULL, &err), 0);
    for (int r = 0; r < s->p; r++)
        CHECK_NEAR(out[r].final, 0);
    prog_free(o.ps);
}

/* The order of rank r as "F0 F1 B0.c1 ..." (a static buffer). */
static inline const char *order_str(const sched_spec *s, int r)
{
    static char buf[4096];
    static sched_action a[512];
    static ps_err err;
    int32_t n = 0;
    if (sched_order(s, r, a, 512, &n, &err))
        return err.msg;
    int len = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < n; i++) {
        len +=
            snprintf(buf + len, sizeof buf - (size_t)len, "%s%c%d",
                     i ? " " : "", prog_kind_letter(a[i].kind), (int)a[i].mb);
        if (a[i].chunk > 0)
            len += snprintf(buf + len, sizeof buf - (size_t)len, ".c%d",
                            (int)a[i].chunk);
    }
    return buf;
}

#endif
