/* Event queue: pops in (time, push order) order whatever mix of in-order
 * and out-of-order pushes, interleaved with pops; peek agrees with pop. */
#include <stdlib.h>

#include "eq.h"
#include "harness.h"

typedef struct ref {
    double t;
    uint64_t seq;
} ref;

static int cmp_ref(const void *a, const void *b)
{
    const ref *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Pushes n events (times from a small set, so ties are common; a fraction
 * earlier than the last), popping now and then; checks against a sort. */
static void check_order(unsigned seed, int n, int backwards_pct)
{
    srand(seed);
    eq q;
    eq_init(&q);
    ref *pushed = malloc((size_t)n * sizeof *pushed);
    ref *popped = malloc((size_t)n * sizeof *popped);
    int np = 0, npop = 0, bad = 0;
    double now = 0;
    for (int i = 0; i < n; i++) {
        double t = now + (double)(rand() % 4);
        if (rand() % 100 < backwards_pct && now > 0)
            t = now;
        eq_push(&q, t, 0, i, 0);
        pushed[np++] = (ref){t, (uint64_t)i};
        if (rand() % 3 == 0) {
            eq_event peek, ev;
            bad += eq_peek(&q, &peek) != 0;
            bad += eq_pop(&q, &ev) != 0;
            bad += peek.seq != ev.seq;
            bad += ev.t < now; /* time never goes back */
            now = ev.t;
            popped[npop++] = (ref){ev.t, ev.seq};
        }
    }
    eq_event ev;
    while (eq_pop(&q, &ev) == 0) {
        bad += ev.t < now;
        now = ev.t;
        popped[npop++] = (ref){ev.t, ev.seq};
    }
    CHECK(eq_empty(&q));
    CHECK_INT(npop, n);
    CHECK_INT(bad, 0);
    /* every push popped once, and pops in (t, seq) order among the events
     * present at the time: equal to a sort when nothing was popped early,
     * which the all-at-once case below checks exactly */
    qsort(pushed, (size_t)np, sizeof *pushed, cmp_ref);
    ref *sorted_pops = malloc((size_t)n * sizeof *sorted_pops);
    for (int i = 0; i < npop; i++)
        sorted_pops[i] = popped[i];
    qsort(sorted_pops, (size_t)npop, sizeof *sorted_pops, cmp_ref);
    int same = 1;
    for (int i = 0; i < n && i < npop; i++)
        same &= pushed[i].seq == sorted_pops[i].seq;
    CHECK(same);
    free(sorted_pops);
    free(pushed);
    free(popped);
    eq_free(&q);
}

/* All pushed first, then all popped: exactly the sorted order. */
static void check_sorted(unsigned seed, int n)
{
    srand(seed);
    eq q;
    eq_init(&q);
    ref *want = malloc((size_t)n * sizeof *want);
    for (int i = 0; i < n; i++) {
        double t = (double)(rand() % 50);
        if (i % 3 == 0)
            t = (double)i; /* an increasing run mixed in */
        eq_push(&q, t, 0, i, 0);
        want[i] = (ref){t, (uint64_t)i};
    }
    qsort(want, (size_t)n, sizeof *want, cmp_ref);
    int ok = 1;
    eq_event ev;
    for (int i = 0; i < n; i++) {
        ok &=
            eq_pop(&q, &ev) == 0 && ev.seq == want[i].seq && ev.t == want[i].t;
    }
    CHECK(ok);
    CHECK_INT(eq_pop(&q, &ev), -1);
    free(want);
    eq_free(&q);
}

int main(void)
{
    for (unsigned seed = 1; seed <= 20; seed++) {
        check_order(seed, 2000, (int)(seed * 5 % 60));
        check_sorted(seed, 3000);
    }
    /* clear keeps memory and restarts sequence numbers */
    eq q;
    eq_init(&q);
    eq_push(&q, 5, 0, 1, 0);
    eq_push(&q, 1, 0, 2, 0);
    eq_clear(&q);
    CHECK(eq_empty(&q));
    eq_push(&q, 3, 0, 7, 0);
    eq_event ev;
    CHECK_INT(eq_pop(&q, &ev), 0);
    CHECK_INT(ev.id, 7);
    CHECK_INT((long long)ev.seq, 0);
    eq_free(&q);
    return harness_done();
}
