/* Event queue: pops in (time, push order) order whatever mix of in-order
 * and out-of-order pushes, interleaved with pops; peek agrees with pop;
 * pushes of now + a few delays (the sorted runs) and of more delays than
 * runs (the heap besides) pop as a plain scan would; a second run opened
 * after fast pops sees run 0's true head. */
#include <stdlib.h>

#include "base/eq.h"
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

/* A simulation's pattern: every push is now + one of ndelays delays
 * (more delays than EQ_RUNS: some go to the heap), now the time of the
 * last pop; every pop must be the one a plain scan for the least (t, seq)
 * of the pending events picks. */
static void check_delays(unsigned seed, int ndelays, int n)
{
    srand(seed);
    eq q;
    eq_init(&q);
    ref *pend = malloc((size_t)n * sizeof *pend);
    double *delay = malloc((size_t)ndelays * sizeof *delay);
    for (int k = 0; k < ndelays; k++)
        delay[k] = (double)(rand() % 1000) / 64;
    int npend = 0, pushed = 0, bad = 0, popped = 0;
    double now = 0;
    while (pushed < n || npend > 0) {
        int burst = rand() % 4;
        for (int b = 0; b < burst && pushed < n; b++, pushed++) {
            double t = now + delay[rand() % ndelays];
            bad += eq_push(&q, t, 0, pushed, 0) != 0;
            pend[npend++] = (ref){t, (uint64_t)pushed};
        }
        if (npend == 0 || rand() % 2)
            continue;
        int least = 0;
        for (int i = 1; i < npend; i++)
            if (cmp_ref(&pend[i], &pend[least]) < 0)
                least = i;
        eq_event ev, peek;
        bad += eq_peek(&q, &peek) != 0 || peek.seq != pend[least].seq;
        bad += eq_pop(&q, &ev) != 0;
        bad += ev.seq != pend[least].seq || ev.t != pend[least].t ||
               ev.id != (int32_t)ev.seq;
        now = ev.t;
        pend[least] = pend[--npend];
        popped++;
    }
    eq_event ev;
    CHECK_INT(eq_pop(&q, &ev), -1);
    CHECK(eq_empty(&q));
    CHECK_INT(popped, n);
    CHECK_INT(bad, 0);
    free(pend);
    free(delay);
    eq_free(&q);
}

/* eq_pop's fast path (one run, no heap) leaves run 0's cached first
 * event behind: the next push that opens a second run, or a peek, must
 * see run 0's true head (5), not the popped 1. */
static void check_stale_first(void)
{
    eq q;
    eq_init(&q);
    eq_event ev;
    for (int i = 0; i < 2; i++) {
        eq_clear(&q);
        eq_push(&q, 1, 0, 1, 0);
        eq_push(&q, 2, 0, 2, 0);
        eq_push(&q, 5, 0, 5, 0);
        CHECK_INT(eq_pop(&q, &ev), 0);
        CHECK_INT(eq_pop(&q, &ev), 0);
        CHECK_INT(ev.id, 2);
        if (i == 1) {
            CHECK_INT(eq_peek(&q, &ev), 0);
            CHECK_INT(ev.id, 5);
        }
        eq_push(&q, 3, 0, 3, 0); /* a second run: 3 < 5 */
        CHECK_INT(eq_pop(&q, &ev), 0);
        CHECK_INT(ev.id, 3);
        CHECK_INT(eq_pop(&q, &ev), 0);
        CHECK_INT(ev.id, 5);
        CHECK(eq_empty(&q));
    }
    eq_free(&q);
}

int main(void)
{
    check_stale_first();
    for (int d = 1; d <= 2 * EQ_RUNS; d += 3)
        check_delays((unsigned)d, d, 20000);
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
