/* Drives transfers through a network without the engine, for the network
 * tests (test_net, test_net_cluster): each starts at its time, events run
 * in queue order, arrivals are written out. Include after harness.h. */
#ifndef PS_NET_DRIVE_H
#define PS_NET_DRIVE_H

#include <math.h>

#include "base/eq.h"
#include "net/net.h"

typedef struct start {
    double t;
    int32_t src, dst;
    double bytes;
} start;

/* Starts each transfer at its time (starts before events at equal times) and
 * writes every arrival time into arrive[i]; the network is settled before
 * time moves on, as the engine does. */
static void drive(net *nw, const start *st, int n, double *arrive)
{
    eq q;
    eq_init(&q);
    net_begin(nw, &q);
    int next = 0;
    for (int i = 0; i < n; i++)
        arrive[i] = NAN;
    for (;;) {
        double tn = next < n ? st[next].t : INFINITY;
        /* FAIR: the starts of one instant share a solve, before time
         * moves on (net_settle) */
        if (!(next > 0 && tn == st[next - 1].t))
            CHECK_INT(net_settle(nw), 0);
        eq_event head;
        if (next < n && (eq_peek(&q, &head) || tn <= head.t)) {
            double tb;
            CHECK_INT(net_start(nw, next, st[next].src, st[next].dst,
                                st[next].bytes, tn, &tb),
                      0);
            next++;
            continue;
        }
        eq_event ev;
        if (eq_pop(&q, &ev))
            break;
        int32_t id = net_event(nw, &ev);
        if (id >= 0)
            arrive[id] = ev.t;
    }
    eq_free(&q);
}

#endif
