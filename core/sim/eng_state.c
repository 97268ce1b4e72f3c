/* The engine's per-run state that both of its paths size and reset: the
 * growable arrays (eng_reserve_) and the statistics and device state a run
 * begins with (eng_begin_stats_). Below eng.c (the array path) and
 * eng_cursor.c (the cursor path), which both call it, so that neither of
 * them calls the other back. */
#include "sim/eng_impl.h"

#include <string.h>

#include "base/limit.h"

int eng_reserve_(void **p, int32_t *cap, int32_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    void *q = limit_realloc(*p, ((size_t)n + 1) * sz);
    if (!q)
        return -1;
    *p = q;
    *cap = n + 1;
    return 0;
}

int eng_begin_stats_(eng_sim *e, int32_t nlanes, int32_t nranks)
{
    if (eng_reserve_((void **)&e->ready, &e->ready_cap, nlanes,
                     sizeof *e->ready) ||
        eng_reserve_((void **)&e->device, &e->device_cap, nranks,
                     sizeof *e->device) ||
        eng_reserve_((void **)&e->device_wait, &e->device_wait_cap, nranks,
                     sizeof *e->device_wait) ||
        eng_reserve_((void **)&e->busy, &e->busy_cap, nlanes,
                     sizeof *e->busy) ||
        eng_reserve_((void **)&e->mem, &e->mem_cap, nranks, sizeof *e->mem) ||
        eng_reserve_((void **)&e->mem_lane, &e->mem_lane_cap, nranks,
                     sizeof *e->mem_lane))
        return -1;
    memset(e->busy, 0, ((size_t)nlanes + 1) * sizeof *e->busy);
    e->mem_merged = 0;
    for (int32_t r = 0; r < nranks; r++) {
        double st = e->static_bytes ? e->static_bytes[r] : 0;
        e->mem[r] = (mem_rank){st, st, 0, st};
        e->mem_lane[r] = -1;
        /* the baseline, as mem_ledger's visit gets it: first per rank */
        if (e->sink.mem_change)
            e->sink.mem_change(e->sink.ctx, r, 0, st);
        e->device[r] = -1;
        e->device_wait[r] = (wait_list){-1, -1};
    }
    e->ready_head = e->ready_n = 0;
    return 0;
}
