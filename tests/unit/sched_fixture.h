/* Shared by the schedule tests (test_sched, test_zb, test_pt): lower a
 * schedule onto a mesh and run it, the mean bubble of the lanes, and a
 * rank's order as an action string. */
#ifndef PS_TEST_SCHED_FIXTURE_H
#define PS_TEST_SCHED_FIXTURE_H

#include <stdio.h>

#include "eng.h"
#include "net.h"
#include "prog.h"
#include "sched.h"

typedef struct outcome {
    int rc;
    ps_err err;
    eng_result res;
    prog_set *ps; /* caller frees */
} outcome;

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
