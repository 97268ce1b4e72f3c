/* An in-order run (ring buffer) plus a binary heap. Heap pop moves the hole
 * at the root down to a leaf along the smaller children and then sifts the
 * last event up from there (Floyd): the last event almost always belongs
 * near the bottom, so this takes one comparison per level instead of two. */
#include "eq.h"

#include <stdlib.h>

#include "limit.h"

void eq_init(eq *q)
{
    q->heap = NULL;
    q->n = q->cap = 0;
    q->run = NULL;
    q->head = q->len = q->run_cap = 0;
    q->next_seq = 0;
}

void eq_free(eq *q)
{
    limit_free(q->heap);
    limit_free(q->run);
    eq_init(q);
}

void eq_clear(eq *q)
{
    q->n = 0;
    q->head = q->len = 0;
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

static inline const eq_event *run_last(const eq *q)
{
    size_t i = q->head + q->len - 1; /* < 2 run_cap: no division per push */
    return &q->run[i >= q->run_cap ? i - q->run_cap : i];
}

/* Appends to the in-order run, growing the ring (unwrapped) when full. */
static int run_push(eq *q, const eq_event *ev)
{
    if (q->len == q->run_cap) {
        size_t cap = q->run_cap ? q->run_cap * 2 : 256;
        eq_event *r = limit_malloc(cap * sizeof *r);
        if (!r)
            return -1;
        for (size_t i = 0; i < q->len; i++)
            r[i] = q->run[(q->head + i) % q->run_cap];
        limit_free(q->run);
        q->run = r;
        q->run_cap = cap;
        q->head = 0;
    }
    size_t tail = q->head + q->len;
    if (tail >= q->run_cap)
        tail -= q->run_cap;
    q->run[tail] = *ev;
    q->len++;
    return 0;
}

int eq_push(eq *q, double t, int32_t type, int32_t id, uint32_t version)
{
    /* not earlier than the run's last event: its seq is larger, so the run
     * stays sorted by (t, seq) */
    if (q->len == 0 || t >= run_last(q)->t) {
        eq_event ev = {t, q->next_seq++, type, id, version};
        return run_push(q, &ev);
    }
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 256;
        eq_event *h = limit_realloc(q->heap, cap * sizeof *h);
        if (!h)
            return -1;
        q->heap = h;
        q->cap = cap;
    }
    eq_event ev = {t, q->next_seq++, type, id, version};
    size_t i = q->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&ev, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = ev;
    return 0;
}

int eq_peek(const eq *q, eq_event *out)
{
    if (q->len > 0 && (q->n == 0 || before(&q->run[q->head], &q->heap[0])))
        *out = q->run[q->head];
    else if (q->n > 0)
        *out = q->heap[0];
    else
        return -1;
    return 0;
}

int eq_pop(eq *q, eq_event *out)
{
    if (q->len > 0 && (q->n == 0 || before(&q->run[q->head], &q->heap[0]))) {
        *out = q->run[q->head];
        if (++q->head == q->run_cap)
            q->head = 0;
        q->len--;
        return 0;
    }
    if (q->n == 0)
        return -1;
    *out = q->heap[0];
    size_t n = --q->n;
    if (n == 0)
        return 0;
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
    return 0;
}
