/* Internal to the network module (net/net.c, net/cluster.c, net/flow.c);
 * not a public header: nothing outside core/net/ includes it. It holds the
 * network's private record, shared by the static topology and routes
 * (net/net.c, net/cluster.c) and the run-time transfer models
 * (net/flow.c), and the small inline accessors they use. */
#ifndef PS_NET_IMPL_H
#define PS_NET_IMPL_H

#include "net/net.h"

#include <stdint.h>

typedef struct link {
    int32_t a, b;
    double bandwidth, latency;
} link;

typedef net_lstat lstat; /* net/net.h */

/* FLOW_QUEUED: behind the data phase of the flow before it on its
 * connection (net_start_conn), on no link yet */
enum flow_state { FLOW_FREE, FLOW_DATA, FLOW_LATENCY, FLOW_QUEUED };

typedef struct flow {
    double remaining; /* bytes still to leave the sender at `updated` */
    double rate;      /* B/s; 0 until the first solve */
    double updated;   /* time `remaining` refers to */
    double latency;   /* sum over the route */
    double new_rate;  /* scratch for the solver */
    int32_t id;       /* the engine's message id */
    int32_t src, dst;
    int32_t slot;      /* mesh: the link's state slot */
    int32_t hops;      /* links of its route (not a mesh: in f_route) */
    int32_t next_free; /* free list while FLOW_FREE */
    int32_t key;       /* net_start_conn's connection key, -1 if none */
    int32_t succ;      /* the connection's next flow, queued, or -1 */
    double begin;      /* when its data phase began */
    uint8_t queued;    /* it waited behind another flow */
    uint32_t version;  /* events with another version are stale */
    uint32_t stamp;    /* component search mark */
    uint8_t state;     /* enum flow_state */
    uint8_t fixed;     /* solver: rate decided */
} flow;

struct net {
    int32_t nranks, nnodes;
    enum net_sharing sharing;
    int sharing_set; /* net_set_sharing was called */
    /* mesh */
    int mesh;
    double mesh_bw, mesh_lat;
    /* explicit links and routes */
    link *links;
    int32_t nlinks, links_cap;
    int32_t *route_off;  /* nranks*nranks + 1 offsets into route_link */
    int32_t *route_link; /* link ids, in path order */
    int32_t max_hops;    /* longest route, >= 1 */
    uint8_t *slack;      /* per link: never a bottleneck (net_set_slack) */
    /* built by net_build_cluster (net/cluster.c): its shape, else 0; its
     * routes are worked out from it (cluster_route), no table */
    int32_t cl_gpus, cl_nics;
    int32_t cl_stride; /* links per node: 4 per GPU, 2 per NIC */
    int32_t cl_core;   /* the fabric's core link, the last one */
    /* replica folding (net_set_image): the rank whose links stand for
     * each rank's, borrowed; NULL: every rank its own */
    const int32_t *image;
    /* run state, one entry per link (mesh: per slot), in one record so
     * that a transfer touches one cache line per link */
    lstat *ls;
    uint8_t *l_dirty; /* not a mesh: per link, touched since net_begin */
    int32_t *dirty;   /* not a mesh: the links touched, ndirty of them */
    int32_t ndirty;
    int32_t state_links; /* entries of ls (mesh: slot capacity) */
    /* mesh slots: mkey[i] = src * nranks + dst (-1: empty) has slot
     * mval[i]; mcap is a power of two, at least twice the slots in use */
    int64_t *mkey;
    int32_t *mval;
    int32_t mcap, nslots;
    int32_t *slot_src, *slot_dst; /* state_links entries */
    int oom;
    eq *q;
    /* FAIR run state */
    int32_t *l_head;     /* first membership on the link, -1 if none */
    int32_t *l_count;    /* flows in data phase on the link */
    uint32_t *l_stamp;   /* component search mark */
    double *l_since;     /* when l_count last became positive */
    double *l_cap;       /* solver: capacity not yet given out */
    int32_t *l_unfixed;  /* solver: flows on the link not yet fixed */
    int32_t fair_links;  /* size of the arrays above */
    int32_t *comp_links; /* fair_links entries: the component's links */
    flow *flows;
    int32_t *f_route;         /* flows_cap * max_hops: each flow's links */
    int32_t *m_prev, *m_next; /* flows_cap * max_hops memberships */
    int32_t flows_cap, free_flow, flows_used;
    int32_t flows_hops;  /* max_hops the membership arrays were sized for */
    int32_t *comp_flows; /* flows_cap entries */
    uint32_t stamp;
    /* links whose flows changed at time pend_t (flows joined or left
     * them), npend of them, repeats allowed, waiting for one solve of
     * their components (net_settle); pend_cap entries, grown
     * geometrically */
    int32_t *pend;
    int32_t npend, pend_cap;
    double pend_t;
    /* the transfer net_event returned last: it waited on its connection
     * (net_event_queued), and when its data phase began */
    int last_queued;
    double last_begin;
};

/* The route src -> dst (src != dst) of a cluster built by
 * net_build_cluster, written into out (5 entries at most): the links the
 * breadth-first search of net_finalize finds (tests/unit/test_net.c
 * compares them pair by pair), from the link ids net/cluster.c lays out:
 * node n's links start at n * cl_stride; its GPU l has r->switch,
 * switch->r, r->NIC, NIC->r at 4 l .. 4 l + 3, its NIC k has NIC->up,
 * down->NIC at 4 g + 2 k and 4 g + 2 k + 1; the core up->down is last.
 * Inside a node: GPU -> node switch -> GPU (the switch's id is below the
 * NICs', so the search's tie goes to it when two GPUs share a NIC).
 * Across nodes: GPU -> its NIC -> core -> the peer's NIC -> GPU. O(1).
 * Under replica folding (net_set_image) the kind of route is the two
 * ranks' and its links are their images'. */
static inline int32_t cluster_route(const net *nw, int32_t src, int32_t dst,
                                    int32_t *out)
{
    int32_t g = nw->cl_gpus, S = nw->cl_stride;
    int32_t ns = src / g, nd = dst / g;
    if (nw->image) { /* the same kind of route, on the images' links */
        src = nw->image[src];
        dst = nw->image[dst];
    }
    int32_t ms = src / g, md = dst / g;
    int32_t ls = src - ms * g, ld = dst - md * g;
    int32_t bs = ms * S, bd = md * S;
    if (ns == nd) {
        out[0] = bs + 4 * ls;
        out[1] = bd + 4 * ld + 1;
        return 2;
    }
    int32_t ks = (int32_t)((int64_t)ls * nw->cl_nics / g);
    int32_t kd = (int32_t)((int64_t)ld * nw->cl_nics / g);
    out[0] = bs + 4 * ls + 2;
    out[1] = bs + 4 * g + 2 * ks;
    out[2] = nw->cl_core;
    out[3] = bd + 4 * g + 2 * kd + 1;
    out[4] = bd + 4 * ld + 3;
    return 5;
}

/* The links of the route src -> dst: for a mesh one implicit link, for a
 * cluster worked out into buf, else borrowed from the route table. */
static inline int32_t route(const net *nw, int32_t src, int32_t dst,
                            const int32_t **links, net_route_buf *buf)
{
    if (nw->mesh) { /* run-time state goes through mesh_slot instead */
        buf->link[0] = NET_MESH_LINK;
        *links = buf->link;
        return 1;
    }
    if (nw->cl_gpus) {
        *links = buf->link;
        return src == dst ? 0 : cluster_route(nw, src, dst, buf->link);
    }
    size_t k = (size_t)src * (size_t)nw->nranks + (size_t)dst;
    *links = nw->route_link + nw->route_off[k];
    return nw->route_off[k + 1] - nw->route_off[k];
}

static inline double link_bw(const net *nw, int32_t l)
{
    return nw->mesh ? nw->mesh_bw : nw->links[l].bandwidth;
}

static inline double link_lat(const net *nw, int32_t l)
{
    return nw->mesh ? nw->mesh_lat : nw->links[l].latency;
}

/* 1 when link l is never a bottleneck (see net_finalize) */
static inline int slack(const net *nw, int32_t l)
{
    return nw->slack && nw->slack[l];
}

/* Fails on a bandwidth that is not positive or a latency that is negative
 * or not finite ("link bandwidth must be positive, got 0"). */
int net_check_figures(double bandwidth, double latency, ps_err *err);

/* Marks the links that are never a bottleneck (slack; net/net.c says
 * why): O(nodes + links). Returns 0, or PS_ERR when out of memory. */
int net_set_slack(net *nw, ps_err *err);

/* Makes room for count links in all (net_add_link grows it geometrically
 * otherwise). Returns 0, or -1 when out of memory. */
int net_reserve_links(net *nw, int32_t count);

/* The state slot of the mesh link src -> dst, handing out the next one on
 * first use; -1 when out of memory. O(1) expected; allocates only when the
 * run uses more pairs than any run before it. (net/state.c) */
int32_t net_mesh_slot(net *nw, int32_t src, int32_t dst);

/* Frees the run state (net/state.c): per-link records, mesh slots, the FAIR
 * arrays and the flow pool. For net_free. */
void net_run_free(net *nw);

#endif
