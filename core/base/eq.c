/* Sorted runs (ring buffers) plus a binary heap. Heap pop moves the hole at
 * the root down to a leaf along the smaller children and then sifts the
 * last event up from there (Floyd): the last event almost always belongs
 * near the bottom, so this takes one comparison per level instead of two.
 * A run that empties swaps places with the last run in use, so push and
 * pop scan only the runs in use (one in a ring collective, two or three in
 * a pipeline of uniform stages). */
#include "base/eq.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "base/limit.h"

void eq_init(eq *q)
{
    q->heap = NULL;
    q->n = q->cap = 0;
    for (int i = 0; i < EQ_RUNS; i++)
        q->run[i] = (eq_run){NULL, 0, 0, 0};
    q->nruns = 0;
    q->next_seq = 0;
}

void eq_free(eq *q)
{
    limit_free(q->heap);
    for (int i = 0; i < EQ_RUNS; i++)
        limit_free(q->run[i].ev);
    eq_init(q);
}

void eq_clear(eq *q)
{
    q->n = 0;
    for (int i = 0; i < EQ_RUNS; i++)
        q->run[i].head = q->run[i].len = 0;
    q->nruns = 0;
    q->next_seq = 0;
}

static inline int before(const eq_event *a, const eq_event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

/* before() without branches, for choices the predictor cannot learn */
static inline int before_nb(const eq_event *a, const eq_event *b)
{
    return (a->t < b->t) | ((a->t == b->t) & (a->seq < b->seq));
}

/* Doubles run r's ring (unwrapped); -1 when out of memory. Once per
 * doubling: out of the per-event path. */
static __attribute__((noinline)) int run_grow(eq_run *r)
{
    assert(r->len == r->cap); /* only a full ring grows */
    uint32_t cap = r->cap ? r->cap * 2 : 256;
    if (r->cap > UINT32_MAX / 2)
        return -1;
    eq_event *ev = limit_malloc((size_t)cap * sizeof *ev);
    if (!ev)
        return -1;
    for (uint32_t i = 0; i < r->len; i++)
        ev[i] = r->ev[(r->head + i) & (r->cap - 1)];
    limit_free(r->ev);
    r->ev = ev;
    r->head = 0;
    r->cap = cap;
    return 0;
}

static __attribute__((noinline)) int heap_push(eq *q, const eq_event *ev)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 256;
        eq_event *h = limit_realloc(q->heap, cap * sizeof *h);
        if (!h)
            return -1;
        q->heap = h;
        q->cap = cap;
    }
    size_t i = q->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(ev, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = *ev;
    return 0;
}

/* Run 0's first event into first_t/first_seq, which eq_pop's fast path
 * leaves stale while run 0 is the only run. */
static inline void refresh0(eq *q)
{
    if (q->nruns == 1) {
        const eq_run *r = &q->run[0];
        q->first_t[0] = r->ev[r->head].t;
        q->first_seq[0] = r->ev[r->head].seq;
    }
}

int eq_push_slow(eq *q, double t, int32_t type, int32_t id, uint32_t version)
{
    refresh0(q);
    eq_event ev = {t, q->next_seq++, type, id, version};
    int nr = q->nruns, best = eq_best_run_(q, t);
    /* a run takes ev only after its last event: each run stays sorted by
     * (t, seq) */
    assert(best < 0 || q->last[best] <= t);
    if (best < 0) {
        if (nr == EQ_RUNS)
            return heap_push(q, &ev);
        best = nr;
        q->run[best].head = q->run[best].len = 0;
    }
    eq_run *r = &q->run[best];
    if (r->len == r->cap && run_grow(r))
        return -1;
    r->ev[(r->head + r->len) & (r->cap - 1)] = ev;
    r->len++;
    q->last[best] = t;
    if (best == nr) { /* a new run counts once it holds the event */
        q->first_t[best] = t;
        q->first_seq[best] = ev.seq;
        q->nruns++;
    }
    return 0;
}

/* The run holding the earliest event, or -1 for the heap's top (or an
 * empty queue). */
static inline int first(const eq *q)
{
    int w = -1, nr = q->nruns;
    double t = q->n > 0 ? q->heap[0].t : INFINITY;
    uint64_t seq = q->n > 0 ? q->heap[0].seq : UINT64_MAX;
    for (int i = 0; i < nr; i++) {
        double ti = q->first_t[i];
        if (ti < t || (ti == t && q->first_seq[i] < seq)) {
            t = ti;
            seq = q->first_seq[i];
            w = i;
        }
    }
    /* times that compare false with everything (NaN) still pop */
    if (w < 0 && q->n == 0 && nr > 0)
        w = 0;
    return w;
}

int eq_peek(eq *q, eq_event *out)
{
    refresh0(q);
    int w = first(q);
    if (w < 0 && q->n == 0)
        return -1;
    *out = w < 0 ? q->heap[0] : q->run[w].ev[q->run[w].head];
    return 0;
}

static void heap_pop(eq *q, eq_event *out)
{
    *out = q->heap[0];
    size_t n = --q->n;
    if (n == 0)
        return;
    eq_event last = q->heap[n];
    eq_event *h = q->heap;
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n) /* branch-free: which child is smaller is a coin toss */
            c += (size_t)before_nb(&h[c + 1], &h[c]);
        h[i] = h[c];
        i = c;
    }
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&last, &h[parent]))
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = last;
}

int eq_pop_slow(eq *q, eq_event *out)
{
    refresh0(q);
    int w = first(q);
    if (w < 0) {
        if (q->n == 0)
            return -1;
        heap_pop(q, out);
        /* the heap's new top is not before the one popped */
        assert(q->n == 0 || !before(&q->heap[0], out));
        return 0;
    }
    eq_run *r = &q->run[w];
    assert(w < q->nruns && r->len > 0);
    *out = r->ev[r->head];
    r->head = (r->head + 1) & (r->cap - 1);
    /* the run's next event is not before the one popped: it is sorted */
    assert(r->len == 1 || !before(&r->ev[r->head], out));
    if (--r->len > 0) {
        q->first_t[w] = r->ev[r->head].t;
        q->first_seq[w] = r->ev[r->head].seq;
        return 0;
    }
    /* keep the runs in use first */
    int l = --q->nruns;
    eq_run tmp = *r;
    *r = q->run[l];
    q->run[l] = tmp;
    q->last[w] = q->last[l];
    q->first_t[w] = q->first_t[l];
    q->first_seq[w] = q->first_seq[l];
    return 0;
}
