/* The engine's completion hook and online statistics: every op is reported
 * exactly once with the times the engine stored, the busy time per lane
 * and the memory ledger kept online equal the second passes (step/pipe.c's sum,
 * mem_ledger) bit for bit, and the memory changes reported (baselines
 * first) are mem_ledger's visits rank by rank, for every built-in schedule
 * and both p2p modes. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "net/net.h"
#include "sched/sched.h"
#include "sim/eng.h"
#include "sim/mem.h"
#include "sim/prog.h"

#define P 4
#define M 8

typedef struct seen {
    const prog_set *ps;
    int64_t calls, mismatches;
    uint8_t *hit; /* per (lane, op): reported */
    int64_t *base;
    int64_t changes; /* mem_change calls */
    double last_t[P];
    int out_of_order;
    int32_t nmem, mem_cap; /* the changes, in the order reported */
    struct change {
        int32_t rank;
        double t, bytes;
    } * mem;
} seen;

static void keep(seen *s, int32_t rank, double t, double bytes)
{
    if (s->nmem == s->mem_cap) {
        s->mem_cap = s->mem_cap ? 2 * s->mem_cap : 256;
        s->mem = realloc(s->mem, (size_t)s->mem_cap * sizeof *s->mem);
    }
    s->mem[s->nmem++] = (struct change){rank, t, bytes};
}

/* mem_ledger's visits, into the second record */
static void on_visit(void *vctx, int32_t rank, double t, double bytes)
{
    keep(vctx, rank, t, bytes);
}

/* 1 when a and b hold the same changes in the same order per rank */
static int same_per_rank(const seen *a, const seen *b)
{
    if (a->nmem != b->nmem)
        return 0;
    for (int32_t r = 0; r < P; r++) {
        int32_t i = 0, j = 0;
        for (;;) {
            while (i < a->nmem && a->mem[i].rank != r)
                i++;
            while (j < b->nmem && b->mem[j].rank != r)
                j++;
            if (i == a->nmem || j == b->nmem)
                break;
            if (a->mem[i].t != b->mem[j].t ||
                a->mem[i].bytes != b->mem[j].bytes)
                return 0;
            i++;
            j++;
        }
        if ((i == a->nmem) != (j == b->nmem))
            return 0;
    }
    return 1;
}

static void on_done(void *vctx, const eng_done *d)
{
    seen *s = vctx;
    const prog_op *op = &s->ps->lanes[d->lane].ops[d->index];
    s->calls++;
    s->hit[s->base[d->lane] + d->index]++;
    if (d->rank != s->ps->lanes[d->lane].rank ||
        memcmp(op, d->op, sizeof *op) != 0)
        s->mismatches++;
}

static void on_mem(void *vctx, int32_t rank, double t, double bytes)
{
    seen *s = vctx;
    keep(s, rank, t, bytes);
    s->changes++;
    if (t < s->last_t[rank])
        s->out_of_order = 1;
    s->last_t[rank] = t;
}

static void one(enum sched_kind kind, int v, enum eng_p2p p2p)
{
    sched_stage st[P * 4];
    for (int i = 0; i < P * v; i++)
        st[i] =
            (sched_stage){1.0 + 0.1 * i, 2.0, 1.0, 1e6 + i, 1e5, 1e3, 0.5, 3e5};
    sched_spec spec = {.kind = kind, .p = P, .v = v, .m = M, .stages = st};
    spec.placement = sched_default_placement(kind);
    prog_set *ps = prog_new(P);
    net *nw = net_new(P);
    eng_sim *e = eng_new();
    ps_err err;
    CHECK_INT(net_set_mesh(nw, 1e6, 1e-3, &err), 0);
    CHECK_INT(sched_lower(&spec, ps, &err), 0);
    CHECK_INT(prog_seal(ps, &err), 0);
    seen s = {.ps = ps};
    s.base = calloc((size_t)ps->nlanes + 1, sizeof *s.base);
    for (int32_t l = 0; l < ps->nlanes; l++)
        s.base[l + 1] = s.base[l] + ps->lanes[l].n;
    s.hit = calloc((size_t)s.base[ps->nlanes] + 1, 1);
    double stat[P] = {1e9, 2e9, 3e9, 4e9};
    eng_sink sink = {on_done, on_mem, &s};
    eng_set_sink(e, &sink);
    eng_set_memory(e, stat);
    eng_result res;
    CHECK_INT(eng_run(e, ps, nw, p2p, &res, &err), 0);
    CHECK_INT(s.calls, prog_count(ps));
    CHECK_INT(s.mismatches, 0);
    int64_t twice = 0;
    for (int64_t i = 0; i < s.base[ps->nlanes]; i++)
        twice += s.hit[i] != 1;
    CHECK_INT(twice, 0);
    CHECK_INT(s.out_of_order, 0);

    eng_stats es;
    eng_stats_of(e, &es);
    CHECK_INT(es.mem_merged, 0);
    for (int32_t l = 0; l < ps->nlanes; l++) {
        double busy = 0;
        for (int32_t i = 0; i < ps->lanes[l].n; i++)
            if (ps->lanes[l].ops[i].type == PROG_COMPUTE)
                busy += ps->lanes[l].ops[i].t_end - ps->lanes[l].ops[i].t_start;
        CHECK(memcmp(&busy, &es.busy[l], sizeof busy) == 0);
    }
    mem_rank want[P];
    seen visits = {.ps = ps};
    CHECK_INT(mem_ledger(ps, stat, want, on_visit, &visits, &err), 0);
    CHECK(memcmp(want, es.mem, sizeof want) == 0);
    /* the baselines first, in rank order, then the changes */
    for (int32_t r = 0; r < P; r++)
        CHECK(s.nmem > r && s.mem[r].rank == r && s.mem[r].t == 0 &&
              s.mem[r].bytes == stat[r]);
    CHECK(same_per_rank(&s, &visits));
    free(visits.mem);
    int64_t changes = 0;
    for (int32_t l = 0; l < ps->nlanes; l++)
        for (int32_t i = 0; i < ps->lanes[l].n; i++)
            changes += ps->lanes[l].ops[i].type == PROG_COMPUTE &&
                       ps->lanes[l].ops[i].mem != 0;
    CHECK_INT(s.changes, changes + P);
    free(s.mem);
    free(s.hit);
    free(s.base);
    eng_free(e);
    net_free(nw);
    prog_free(ps);
}

int main(void)
{
    static const enum sched_kind kinds[] = {SCHED_GPIPE, SCHED_1F1B,
                                            SCHED_ZB_H1, SCHED_ZB_H2,
                                            SCHED_ZBV,   SCHED_INTERLEAVED_ZB};
    for (int p2p = 0; p2p < 2; p2p++) {
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
            one(kinds[k], kinds[k] == SCHED_ZBV ? 2 : 1, (enum eng_p2p)p2p);
        one(SCHED_INTERLEAVED, 2, (enum eng_p2p)p2p);
    }
    return harness_done();
}
