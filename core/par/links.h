/* Which links a layout's groups cross, and whether a dimension may be
 * folded (simulated once, par/sim.h) without hiding contention. */
#ifndef PS_PAR_LINKS_H
#define PS_PAR_LINKS_H

#include "base/err.h"
#include "net/net.h"
#include "par/layout.h"

/* 1 when the groups over dimension d may each be simulated by one member:
 * no link carries the traffic of two of a group's positions (d
 * coordinates) beyond its capacity, so a simulated member's transfers take
 * the times they would take beside the unsimulated members' ones. The
 * traffic considered is every rank's to its neighbours in its
 * data-parallel (with context) and pipeline groups, both ways (the ring's
 * and the pipeline's peers; a tree reaches other nodes over the same kinds
 * of links in the clusters pipesim builds); each source counts at the
 * bandwidth of its first link (a GPU sends no faster than its own link to
 * the switch or NIC). So: 1 on a mesh (every pair its own link) and on a
 * cluster whose GPUs each have a NIC and whose fabric is not
 * oversubscribed; 0 when two GPUs of a TP group share a NIC, or an
 * oversubscribed core carries every GPU's traffic. Returns 1, 0, or
 * PS_ERR when out of memory. O(world x route length x log). */
int par_fold_exact(const par_layout *L, enum par_dim d, const net *nw,
                   ps_err *err);

#endif
