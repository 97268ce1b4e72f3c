/* The network: nodes (ranks first, then switches), directed links with a
 * bandwidth and a latency, and a route (list of links) for every ordered
 * pair of ranks. At run time the engine starts transfers on it and the
 * network reports, through the event queue, when each one has arrived.
 *
 * Sharing models:
 *   NET_FIFO  a directed link carries one transfer at a time, in the order
 *             they were started; a transfer holds every link of its route
 *             from its start to its end and takes sum(latency) + bytes /
 *             min(bandwidth). On dedicated links this is the textbook
 *             alpha-beta cost.
 *   NET_FAIR  see net.c: flows share links max-min fairly.
 *
 * A mesh (net_set_mesh) joins every ordered pair of ranks by its own link
 * without storing N^2 routes. */
#ifndef PS_NET_H
#define PS_NET_H

#include <stdint.h>

#include "eq.h"
#include "err.h"

typedef struct net net;

enum net_sharing { NET_FIFO, NET_FAIR };

/* Event type the network pushes into the engine's queue; the engine hands
 * every event of this type back to net_event. */
#define NET_EVENT 2

typedef struct net_link_info {
    int32_t a, b;       /* from node, to node */
    double bandwidth;   /* B/s */
    double latency;     /* s */
    double bytes;       /* carried during the last run */
    double busy;        /* seconds with at least one transfer */
} net_link_info;

/* Creates a network of nranks ranks and no links; NULL when out of memory.
 * net_free(NULL) is a no-op. */
net *net_new(int32_t nranks);
void net_free(net *nw);

int32_t net_ranks(const net *nw);

/* Joins every ordered pair of ranks by a dedicated directed link. Fails on a
 * bandwidth that is not positive or a negative latency. */
int net_set_mesh(net *nw, double bandwidth, double latency, ps_err *err);

/* Adds a node that is not a rank (a switch); returns its node id (>= nranks)
 * or -1 when out of memory. */
int32_t net_add_switch(net *nw);

/* Adds a directed link from node a to node b. Fails on bad figures or
 * nodes. */
int net_add_link(net *nw, int32_t a, int32_t b, double bandwidth,
                 double latency, ps_err *err);

void net_set_sharing(net *nw, enum net_sharing sharing);

/* Computes routes (fewest hops, ties broken by lowest node id). Fails naming
 * the first pair of ranks with no route. Call after the last link. */
int net_finalize(net *nw, ps_err *err);

/* Time of a lone transfer of bytes from src to dst: sum of latencies +
 * bytes / bottleneck bandwidth. For cost models; no state is touched. */
double net_lone_time(const net *nw, int32_t src, int32_t dst, double bytes);

/* --- run time (called by the engine) --- */

/* Forgets all transfers and statistics; events go into q. */
void net_begin(net *nw, eq *q);

/* Starts transfer id (the engine's message id) of bytes from src to dst at
 * time now. Sets *t_begin to when bytes start moving (later than now when a
 * FIFO link is still busy). Returns 0, or -1 when out of memory. */
int net_start(net *nw, int32_t id, int32_t src, int32_t dst, double bytes,
              double now, double *t_begin);

/* Handles one NET_EVENT popped from the queue. Returns the id of the
 * transfer that has arrived, or -1 when the event is stale. */
int32_t net_event(net *nw, const eq_event *ev);

/* Link statistics of the last run: fills up to max entries, returns the
 * number of links. For a mesh, only links that carried bytes are listed. */
int32_t net_links(const net *nw, net_link_info *out, int32_t max);

#endif
