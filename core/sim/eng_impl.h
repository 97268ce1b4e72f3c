/* Internal to the engine (sim/eng.c, the array path; sim/eng_cursor.c, the
 * cursor path): the engine's record and what both paths share. Not a
 * public header: nothing outside core/sim/eng*.c includes it. */
#ifndef PS_ENG_IMPL_H
#define PS_ENG_IMPL_H

#include "sim/eng.h"

#include <stddef.h>

typedef struct eng_cursor eng_cursor; /* sim/eng_cursor.c's per-run state */
typedef struct lane_rt lane_rt;       /* sim/eng.c's per-lane state */

enum lane_state {
    LANE_READY,
    LANE_COMPUTING,
    LANE_WAIT_DEVICE,
    LANE_WAIT_BATCH,
    LANE_WAIT_SIGNAL,
    LANE_STALLED, /* its rank stalled (sim/fault.h): it starts nothing more */
    LANE_DONE
};

typedef struct wait_list {
    int32_t head, tail;
} wait_list;

struct eng_sim {
    eq q;
    /* per-run arrays; each has its own capacity so a failed grow leaves
     * every array consistent with its capacity */
    lane_rt *lane;
    int32_t lane_cap;
    int32_t *ready; /* ring of lanes to advance */
    int32_t ready_cap;
    uint8_t *msg;
    int32_t msg_cap;
    int32_t *device; /* per rank: lane computing, or -1 */
    int32_t device_cap;
    wait_list *device_wait;
    int32_t device_wait_cap;
    uint8_t *raised;
    int32_t raised_cap;
    wait_list *signal_wait;
    int32_t signal_wait_cap;
    int32_t ready_head, ready_n;
    /* online statistics (eng_stats) */
    double *busy; /* per lane */
    int32_t busy_cap;
    mem_rank *mem;     /* per rank */
    int32_t *mem_lane; /* per rank: the lane of its last change, -1 */
    int32_t mem_cap, mem_lane_cap;
    int mem_merged;
    const double *static_bytes;
    eng_sink sink;
    eng_cursor *cur; /* the cursor path's arrays, NULL until used */
    /* frees cur and sets it NULL: set with cur by the cursor path
     * (sim/eng_cursor_state.c), so that eng_free calls it without this
     * file's side of the engine knowing the cursor path's records */
    void (*cur_free)(eng_sim *e);
    /* the run in progress */
    prog_set *ps;
    net *nw;
    enum eng_p2p p2p;
    int64_t transfers;
    int64_t ops;
    int64_t count_base; /* eng_set_count_base: the cursor path's counts
                           start there */
    int oom;
    const fault_plan *fp; /* NULL: no faults, no deadline */
    /* lanes whose recv_timeout expired at expired_t, linked through
     * lane_rt.expired_next (not next: a lane may move on and join a wait
     * list during the instant), -1 if none; they fail once every other
     * event of that instant has run */
    int32_t expired, expired_tail;
    double expired_t;
};

/* Grows *p to hold n + 1 elements of size sz; *cap counts elements and is
 * only updated on success. */
int eng_reserve_(void **p, int32_t *cap, int32_t n, size_t sz);

/* Sizes and resets the online statistics and the per-rank device state
 * for nlanes lanes on nranks ranks, and reports each rank's baseline to
 * the sink's mem_change; -1 when out of memory. */
int eng_begin_stats_(eng_sim *e, int32_t nlanes, int32_t nranks);

/* A memory change of lane l's rank r at t (mem_ledger's apply). */
static inline void eng_mem_apply_(eng_sim *e, int32_t l, int32_t r, double t,
                                  double delta)
{
    mem_rank *m = &e->mem[r];
    if (e->mem_lane[r] != l) {
        e->mem_merged |= e->mem_lane[r] >= 0;
        e->mem_lane[r] = l;
    }
    m->final += delta;
    if (m->final > m->peak) {
        m->peak = m->final;
        m->t_peak = t;
    }
    if (e->sink.mem_change)
        e->sink.mem_change(e->sink.ctx, r, t, m->final);
}

#endif
