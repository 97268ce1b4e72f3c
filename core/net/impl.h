/* Internal to the network module (net/net.c, net/flow.c); not a public
 * header: nothing outside core/net*.c includes it. It holds the network's
 * private record, shared by the static topology and routes (net/net.c) and the
 * run-time transfer models (net/flow.c), and the small inline accessors
 * both use. */
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
    uint8_t *slack;      /* per link: never a bottleneck (net_finalize) */
    /* built by net_build_cluster: its shape, else 0 */
    int32_t cl_gpus, cl_nics;
    /* run state, one entry per link (mesh: per slot), in one record so
     * that a transfer touches one cache line per link */
    lstat *ls;
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
    int32_t *m_prev, *m_next; /* flows_cap * max_hops memberships */
    int32_t flows_cap, free_flow, flows_used;
    int32_t flows_hops;  /* max_hops the membership arrays were sized for */
    int32_t *comp_flows; /* flows_cap entries */
    uint32_t stamp;
    /* the transfer net_event returned last: it waited on its connection
     * (net_event_queued), and when its data phase began */
    int last_queued;
    double last_begin;
};

/* The links of the route src -> dst: for a mesh one implicit link. */
static inline int32_t route(const net *nw, int32_t src, int32_t dst,
                            const int32_t **links, int32_t *one)
{
    if (nw->mesh) { /* run-time state goes through mesh_slot instead */
        *one = NET_MESH_LINK;
        *links = one;
        return 1;
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

/* Frees the run state (net/flow.c): per-link records, mesh slots, the FAIR
 * arrays and the flow pool. For net_free. */
void net_run_free(net *nw);

#endif
