/* The network: nodes (ranks first, then switches and NICs), directed links
 * with a bandwidth and a latency, and a route (list of links) for every
 * ordered pair of ranks: a table for explicit links, worked out from the
 * two ranks for a cluster (net_build_cluster), one implicit link per pair
 * for a mesh. At run time the engine starts transfers on it and
 * the network reports, through the event queue, when each one has arrived.
 *
 * Sharing models:
 *   NET_FIFO  a directed link carries one transfer at a time, in the order
 *             they were started; a transfer holds every link of its route
 *             from its start to its end and takes sum(latency) + bytes /
 *             min(bandwidth). On dedicated links this is the textbook
 *             alpha-beta cost, exactly.
 *   NET_FAIR  flow-level max-min fair sharing (SimGrid's LMM, computed by
 *             progressive filling). A transfer is a flow that starts its
 *             data phase at once: it occupies bandwidth on every link of its
 *             route until its bytes have left, at a rate that changes
 *             whenever a flow sharing a link with it (transitively) starts or
 *             ends. It arrives sum(latency) after its data phase ends: the
 *             latency is propagation and switching delay, which holds no
 *             bandwidth. A lone flow therefore takes sum(latency) + bytes /
 *             min(bandwidth), as under FIFO. Limits: no packet-level effects
 *             (slow start, incast loss, head-of-line blocking), no per-message
 *             overhead beyond latency, and a flow's rate is set by its
 *             bottleneck instantly.
 *
 * Default sharing (until net_set_sharing is called): NET_FIFO on a mesh,
 * NET_FAIR otherwise. On a mesh every ordered pair has its own link, so
 * collectives never put two flows on one link at once and both models give
 * the same times; FIFO is the cheaper of the two and keeps the closed forms
 * exact. Explicit and cluster topologies share links (a NIC, a spine), where
 * FIFO would serialise flows over their whole route and overstate contention.
 *
 * A mesh (net_set_mesh) joins every ordered pair of ranks by its own link
 * without storing N^2 routes. */
#ifndef PS_NET_H
#define PS_NET_H

#include <stdint.h>

#include "base/eq.h"
#include "base/err.h"

typedef struct net net;

enum net_sharing { NET_FIFO, NET_FAIR };

/* The network pushes its events into the engine's queue as EQ_NET (base/eq.h,
 * which owns the event types); the engine hands each back to net_event. */

typedef struct net_link_info {
    int32_t a, b;     /* from node, to node */
    double bandwidth; /* B/s */
    double latency;   /* s */
    double bytes;     /* carried during the last run */
    double busy;      /* seconds with at least one transfer: FIFO counts a
                         transfer's whole [start, end]; FAIR counts data
                         phases only (latency holds no bandwidth) */
} net_link_info;

/* A DGX-like hierarchical cluster (net_build_cluster). Rank r is GPU
 * r % gpus_per_node of node r / gpus_per_node. Per node: a switch joined to
 * each of its GPUs (NVLink/NVSwitch-like, `intra`), and nics_per_node NICs;
 * GPU g uses NIC g * nics_per_node / gpus_per_node, as NCCL sends inter-node
 * traffic through the GPU's nearest NIC. Every NIC has an uplink into the
 * fabric and a downlink out of it (`inter`); all uplinks meet in one core
 * link of capacity nodes * nics_per_node * inter_bw / oversubscription,
 * which every inter-node flow crosses.
 * Routes: intra-node GPU -> node switch -> GPU (latency intra_lat, split in
 * halves over the two links); inter-node GPU -> NIC -> core -> NIC -> GPU
 * (latency inter_lat, split in halves over the NIC up- and downlink; the
 * GPU-NIC PCIe hops have the NIC's bandwidth and no latency). A lone
 * transfer therefore takes intra_lat + x / intra_bw inside a node and
 * inter_lat + x / inter_bw across nodes. Not modelled: PXN (NVLink to a
 * peer GPU's NIC), rail-optimised fabrics, multi-level fat trees.
 * Cost: O(ranks) time and memory, 4 links per GPU and 2 per NIC (24 bytes
 * each) and one core link; routes are worked out from the two ranks when
 * asked (O(1)), never stored per pair, so a cluster has no rank limit
 * but int32 node and link ids. */
typedef struct net_cluster {
    int32_t nodes, gpus_per_node;
    int32_t nics_per_node; /* 1 .. gpus_per_node; 0 means gpus_per_node */
    double intra_bw, intra_lat;
    double inter_bw, inter_lat;
    double oversubscription; /* >= 1; 0 means 1 */
} net_cluster;

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

/* Builds the cluster c (see net_cluster) into nw, which must have been
 * created with nodes * gpus_per_node ranks and have no links; it needs no
 * net_finalize, and takes no more links or switches after. Fails naming
 * the bad field, or when out of memory. */
int net_build_cluster(net *nw, const net_cluster *c, ps_err *err);

/* What net_build_cluster allocates for c, in bytes (its links, their
 * slack marks, and the bandwidth into each node that it sums while it
 * runs), for the memory stop's message; O(1). A run's state on it is
 * net_run_bytes. */
size_t net_cluster_bytes(const net_cluster *c);

/* Overrides the default sharing model (see the top of this file). */
void net_set_sharing(net *nw, enum net_sharing sharing);

/* The sharing model in force. */
enum net_sharing net_sharing_of(const net *nw);

/* The most ranks of a network of explicit links (net_add_link and
 * net_finalize): its routes are a table with an entry per ordered pair
 * (16384 ranks: 2^28 pairs, several GB). A mesh and a cluster keep no
 * table and have no such limit. */
#define NET_MAX_ROUTED_RANKS 16384

/* Computes routes (fewest hops, ties broken by lowest node id). Fails naming
 * the first pair of ranks with no route ("no route from rank 3 to rank 0"),
 * or when the network has more than NET_MAX_ROUTED_RANKS ranks. Call after
 * the last link; a mesh or a cluster needs no call (a no-op for them).
 * O(ranks * (nodes + links)) time, O(ranks^2 * hops) memory. */
int net_finalize(net *nw, ps_err *err);

/* Time of a lone transfer of bytes from src to dst: sum of latencies +
 * bytes / bottleneck bandwidth. For cost models; no state is touched. */
double net_lone_time(const net *nw, int32_t src, int32_t dst, double bytes);

/* 1 when nw is a mesh (net_set_mesh), else 0. */
int net_is_mesh(const net *nw);

/* Replica folding (par/fold.h): 1 when every link but the core belongs to
 * one GPU, all alike, and the core is never a bottleneck: a cluster of
 * net_build_cluster with a NIC per GPU, oversubscription 1, fair sharing.
 * Then a permutation of ranks that keeps ranks on one node together
 * (and apart) maps routes to routes and link loads to link loads. */
int net_foldable(const net *nw);

/* Replica folding: routes between ranks a and b take the kind of route
 * of a and b (inside a node or across) over the links of image[a] and
 * image[b] (nranks entries, borrowed until the next call; NULL: every
 * rank's own, the default). A cluster of net_build_cluster only (a no-op
 * elsewhere). */
void net_set_image(net *nw, const int32_t *image);

/* The node of rank on a cluster of net_build_cluster; -1 elsewhere. */
int32_t net_node_of(const net *nw, int32_t rank);

/* The NICs per node (nics_per_node, its default applied) when nw was built
 * by net_build_cluster with gpus_per_node GPUs per node; 0 for any other
 * network or node size. */
int32_t net_nics_per_node(const net *nw, int32_t gpus_per_node);

/* The one link net_route gives for a mesh pair. A mesh's N*N links have no
 * ids of their own (N may be 1 << 20); all have the mesh's figures, and
 * pairs are told apart by their ends. */
#define NET_MESH_LINK (-1)

/* Bandwidth and latency of link id as net_route hands it out (including
 * NET_MESH_LINK). For cost models. */
void net_link_figures(const net *nw, int32_t id, double *bandwidth,
                      double *latency);

/* Sum of latencies and bottleneck bandwidth of the route src -> dst
 * (0 and INFINITY when src == dst). */
void net_path(const net *nw, int32_t src, int32_t dst, double *latency,
              double *bandwidth);

/* Room for a route that net_route works out rather than lends: a
 * cluster's (at most 5 links) or a mesh's one implicit link. */
#define NET_ROUTE_MAX 8
typedef struct net_route_buf {
    int32_t link[NET_ROUTE_MAX];
} net_route_buf;

/* The link ids of the route src -> dst, in path order: *links points into
 * nw's route table (valid until the network changes) or, for a cluster or
 * a mesh, into *buf (valid until buf is reused). A mesh's single implicit
 * link, NET_MESH_LINK, is the same for every pair (so a cost model that
 * counts flows per link id must treat a mesh apart). Returns the number
 * of links (0 when src == dst). O(1). */
int32_t net_route(const net *nw, int32_t src, int32_t dst,
                  const int32_t **links, net_route_buf *buf);

/* --- run time (called by the engine) --- */

/* Forgets all transfers and statistics; events go into q. Sizes the per-run
 * arrays; a failure to allocate is reported by the next net_start. O(links
 * the last run used) once the arrays are sized (net_run_bytes). */
void net_begin(net *nw, eq *q);

/* Starts transfer id (the engine's message id) of bytes from src to dst at
 * time now. Sets *t_begin to when bytes start moving (later than now when a
 * FIFO link is still busy; now under FAIR). Returns 0, or -1 when out of
 * memory. FAIR: O(route length); the solve waits for net_settle. */
int net_start(net *nw, int32_t id, int32_t src, int32_t dst, double bytes,
              double now, double *t_begin);

/* net_start for a transfer of a connection: an in-order stream of
 * transfers from src to dst, as one channel of an NCCL communicator moves
 * its chunks through one FIFO per peer (src/device/prims_simple.h) and a
 * communicator's collectives run in issue order. Under NET_FAIR its data
 * phase begins when the data phase of the connection's transfer before it
 * ends (at once when there is none or it has ended): a burst of k posted
 * together arrives one after another at the link's rate, as on the wire,
 * instead of sharing the link and all arriving after k transfers' time,
 * which would hold every later hop of a pipelined ring behind the whole
 * burst. Under NET_FIFO the links carry transfers in order already: it is
 * net_start. *conn is the caller's state of the connection, 0 before its
 * first transfer (of every run); key tells the caller's connections apart
 * (>= 0, the same for all of one connection). *t_begin is set to now; a
 * transfer that waited reports its begin through net_event_queued. */
int net_start_conn(net *nw, int32_t *conn, int32_t key, int32_t id, int32_t src,
                   int32_t dst, double bytes, double now, double *t_begin);

/* For callers that start many transfers between the same two ranks (the
 * engine's cursor path keeps one per channel): a handle of the pair's
 * run-time state, valid until the next net_begin, so that net_start_pair
 * skips the lookup (for a FIFO mesh, the hash of the pair's state slot).
 * NET_NO_PAIR when there is nothing to cache (net_start_pair then does
 * what net_start does); -1 when out of memory. */
#define NET_NO_PAIR (-2)
int32_t net_pair(net *nw, int32_t src, int32_t dst);

/* The run-time state one pair handed out by net_pair keeps, in bytes (0
 * when pairs keep none): a run on a mesh keeps it for each pair it uses,
 * so the memory stop can say what a run would need. */
size_t net_pair_bytes(const net *nw);

/* The run-time state net_begin keeps for the links of a network that is
 * not a mesh (a mesh's is per pair, net_pair_bytes), in bytes: O(links),
 * allocated once and kept from run to run, so the memory stop can say
 * what a run would need. A run resets only the links the run before it
 * used: it costs O(links it uses) however large the cluster. */
size_t net_run_bytes(const net *nw);

/* net_start with a handle from net_pair(nw, src, dst). */
int net_start_pair(net *nw, int32_t pair, int32_t id, int32_t src, int32_t dst,
                   double bytes, double now, double *t_begin);

/* The run-time record of a link (of a mesh pair: its state slot). */
typedef struct net_lstat {
    double free_at; /* FIFO: when the link is free again */
    double carried; /* bytes */
    double busy;    /* seconds */
} net_lstat;

/* For the engine's inline fast path on a FIFO mesh: 1 and the slots that
 * net_pair's handles index (valid until the next net_pair or net_begin)
 * and the mesh's figures when nw is a mesh under NET_FIFO, else 0. A
 * transfer started with net_mesh_start and pushed by the caller as EQ_NET
 * at the returned time is exactly net_start_pair's. */
int net_mesh_fifo(net *nw, net_lstat **slots, double *bandwidth,
                  double *latency);

/* net_start_pair's FIFO mesh arithmetic on slot ls: returns when the bytes
 * have arrived, sets *t_begin to when they start moving. It is net_start's
 * on the one mesh link, spelled out: the same arithmetic in the same order
 * (0 + latency is latency, min(inf, bandwidth) is bandwidth). */
static inline double net_mesh_start(net_lstat *ls, double bandwidth,
                                    double latency, double bytes, double now,
                                    double *t_begin)
{
    double start = ls->free_at > now ? ls->free_at : now;
    double end = start + latency + bytes / bandwidth;
    ls->free_at = end;
    ls->carried += bytes;
    ls->busy += end - start;
    *t_begin = start;
    return end;
}

/* Under NET_FAIR, flows that start or end at the same time share one
 * solve: net_start, net_start_conn and net_event only note the links whose
 * flows changed, and the flows sharing them (transitively) get their new
 * rates, and their completion events, when the caller settles the network
 * before time advances. net_settle does so when no event at the noted
 * time is left in the queue (call it before every pop: O(1) with nothing
 * noted, else an eq_peek); net_settle_now does so at once. Each connected
 * component of the noted links is solved once, by progressive filling:
 * O(its links and memberships times its distinct rates). Under NET_FIFO
 * nothing is ever noted. Both return 0, or -1 when out of memory (the next
 * net_start fails too). */
int net_settle(net *nw);
int net_settle_now(net *nw);

/* Handles one EQ_NET event popped from the queue. Returns the id of the
 * transfer that has arrived, or -1 when the event is stale or internal (a
 * FAIR flow whose data phase ended and whose latency is still running).
 * FAIR: O(route length); the solve waits for net_settle.
 * Under NET_FIFO every EQ_NET event is the arrival of transfer ev->id,
 * which it returns: callers may skip the call. */
int32_t net_event(net *nw, const eq_event *ev);

/* After net_event returned a transfer: 1 when it waited behind another on
 * its connection (net_start_conn), with *t_begin when its data phase
 * began; else 0. */
int net_event_queued(const net *nw, double *t_begin);

/* Link statistics of the last run: fills up to max entries, returns the
 * number of links (O(1) with max 0 but on a mesh). For a mesh, only links
 * that carried bytes are listed. */
int32_t net_links(const net *nw, net_link_info *out, int32_t max);

#endif
