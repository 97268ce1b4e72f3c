/* Memory ledger over executed programs. Ranks with one lane are walked in
 * program order; a rank with several lanes (a compute lane plus a gradient
 * sync lane) has its compute ops merged by start time, O(n log n). */
#include "sim/mem.h"

#include <stdlib.h>

typedef struct change {
    double t;
    double delta;
    int32_t rank;
    int32_t order; /* tie-break: program order */
} change;

static int cmp_change(const void *pa, const void *pb)
{
    const change *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if ((a->delta < 0) != (b->delta < 0)) /* frees first: ops never overlap */
        return a->delta < 0 ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

static void apply(mem_rank *m, int32_t rank, double t, double delta,
                  mem_visit visit, void *ctx)
{
    m->final += delta;
    if (m->final > m->peak) {
        m->peak = m->final;
        m->t_peak = t;
    }
    if (visit)
        visit(ctx, rank, t, m->final);
}

int mem_ledger(const prog_set *ps, const double *static_bytes, mem_rank *out,
               mem_visit visit, void *ctx, ps_err *err)
{
    int32_t *lanes_with_compute =
        calloc((size_t)ps->nranks + 1, sizeof(int32_t));
    if (!lanes_with_compute)
        return ps_errf(err, "out of memory in the memory ledger");
    int64_t changes = 0;
    for (int32_t l = 0; l < ps->nlanes; l++) {
        int has = 0;
        for (int32_t i = 0; i < ps->lanes[l].n; i++)
            if (ps->lanes[l].ops[i].type == PROG_COMPUTE &&
                ps->lanes[l].ops[i].mem != 0) {
                has = 1;
                changes++;
            }
        lanes_with_compute[ps->lanes[l].rank] += has;
    }
    for (int32_t r = 0; r < ps->nranks; r++) {
        double s = static_bytes ? static_bytes[r] : 0;
        out[r] = (mem_rank){s, s, 0, s};
        if (visit)
            visit(ctx, r, 0, s);
    }
    int merge = 0;
    for (int32_t r = 0; r < ps->nranks; r++)
        merge |= lanes_with_compute[r] > 1;
    free(lanes_with_compute);

    if (!merge) {
        for (int32_t l = 0; l < ps->nlanes; l++) {
            const prog_lane *lane = &ps->lanes[l];
            mem_rank *m = &out[lane->rank];
            for (int32_t i = 0; i < lane->n; i++) {
                const prog_op *op = &lane->ops[i];
                if (op->type != PROG_COMPUTE || op->mem == 0)
                    continue;
                apply(m, lane->rank, op->mem > 0 ? op->t_start : op->t_end,
                      op->mem, visit, ctx);
            }
        }
        return PS_OK;
    }
    change *c = malloc(((size_t)changes + 1) * sizeof *c);
    if (!c)
        return ps_errf(err, "out of memory in the memory ledger");
    int64_t n = 0;
    for (int32_t l = 0; l < ps->nlanes; l++) {
        const prog_lane *lane = &ps->lanes[l];
        for (int32_t i = 0; i < lane->n; i++) {
            const prog_op *op = &lane->ops[i];
            if (op->type != PROG_COMPUTE || op->mem == 0)
                continue;
            c[n] = (change){op->mem > 0 ? op->t_start : op->t_end, op->mem,
                            lane->rank, (int32_t)n};
            n++;
        }
    }
    qsort(c, (size_t)n, sizeof *c, cmp_change);
    for (int64_t i = 0; i < n; i++)
        apply(&out[c[i].rank], c[i].rank, c[i].t, c[i].delta, visit, ctx);
    free(c);
    return PS_OK;
}
