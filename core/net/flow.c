/* Network at run time: the FIFO and max-min fair transfer models and the
 * per-link figures of the last run (net_links). The run state they use
 * (per-link records, mesh state slots, their sizing and reset per run) is
 * net/state.c; the static topology and routes are net/net.c and
 * net/cluster.c; the private record they share is net/impl.h.
 *
 * FAIR keeps, per link, an intrusive doubly linked list of the flows in
 * their data phase (membership node = flow * max_route + hop), so a flow
 * joins and leaves its links in O(route length). When a flow starts or ends,
 * its links are noted; before time advances (net_settle) the connected
 * component of flows reachable from the noted links through shared links
 * is collected and re-solved by progressive filling, once however many
 * flows started or ended at that instant (an all-to-all of F flows costs
 * one solve, not F). Only flows whose rate changed get a new completion
 * event, and their old events go stale by version (eq_event.version). A
 * connection's flows (net_start_conn) form a chain: a queued flow joins its
 * links when the data phase of the one before it ends, in the same solve.
 * All run-time arrays are sized in net_begin or grown geometrically, so the
 * per-event path does not allocate in steady state. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"
#include "net/impl.h"
#include "net/net.h"

/* ------------------------------------------------------------------ */
/* FIFO                                                                */

/* Not a mesh: link l's run state is about to change; the first time in a
 * run, it goes on the list that the next net_begin resets. */
static inline void touch(net *nw, int32_t l)
{
    if (!nw->l_dirty[l]) {
        nw->l_dirty[l] = 1;
        nw->dirty[nw->ndirty++] = l;
    }
}

/* route() for the run-time path: a mesh link is its state slot (in buf;
 * -1 when out of memory). */
static inline int32_t run_route(net *nw, int32_t src, int32_t dst,
                                const int32_t **links, net_route_buf *buf)
{
    if (nw->mesh) {
        buf->link[0] = net_mesh_slot(nw, src, dst);
        *links = buf->link;
        return 1;
    }
    return route(nw, src, dst, links, buf);
}

/* pair: a mesh slot from net_pair, or -1 to look it up */
static int start_fifo(net *nw, int32_t id, int32_t src, int32_t dst,
                      double bytes, double now, double *t_begin, int32_t pair)
{
    const int32_t *links;
    net_route_buf buf = {{pair}};
    int32_t len = 1;
    if (pair >= 0 && nw->mesh)
        links = buf.link;
    else
        len = run_route(nw, src, dst, &links, &buf);
    if (len == 1 && links[0] < 0)
        return -1; /* out of memory for a mesh slot */
    double start = now, lat = 0, bw = INFINITY;
    for (int32_t i = 0; i < len; i++) {
        int32_t l = links[i];
        if (nw->ls[l].free_at > start)
            start = nw->ls[l].free_at;
        lat += link_lat(nw, l);
        if (link_bw(nw, l) < bw)
            bw = link_bw(nw, l);
    }
    double end = start + lat + bytes / bw;
    for (int32_t i = 0; i < len; i++) {
        int32_t l = links[i];
        if (!nw->mesh)
            touch(nw, l);
        nw->ls[l].free_at = end;
        nw->ls[l].carried += bytes;
        nw->ls[l].busy += end - start;
    }
    *t_begin = start;
    return eq_push(nw->q, end, EQ_NET, id, 0);
}

/* ------------------------------------------------------------------ */
/* Max-min fair sharing                                                */

/* A free flow slot, growing the pool (and the membership lists, which are
 * indexed by slot) geometrically; -1 when out of memory. */
static int32_t alloc_flow(net *nw)
{
    if (nw->free_flow >= 0) {
        int32_t f = nw->free_flow;
        nw->free_flow = nw->flows[f].next_free;
        return f;
    }
    if (nw->flows_used == nw->flows_cap) {
        int32_t cap = nw->flows_cap ? nw->flows_cap * 2 : 256;
        size_t h = (size_t)nw->max_hops;
        flow *fl = limit_realloc(nw->flows, (size_t)cap * sizeof *fl);
        if (fl)
            nw->flows = fl;
        int32_t *fr = limit_realloc(nw->f_route, (size_t)cap * h * sizeof *fr);
        if (fr)
            nw->f_route = fr;
        int32_t *mp = limit_realloc(nw->m_prev, (size_t)cap * h * sizeof *mp);
        if (mp)
            nw->m_prev = mp;
        int32_t *mn = limit_realloc(nw->m_next, (size_t)cap * h * sizeof *mn);
        if (mn)
            nw->m_next = mn;
        int32_t *cf = limit_realloc(nw->comp_flows, (size_t)cap * sizeof *cf);
        if (cf)
            nw->comp_flows = cf;
        if (!fl || !fr || !mp || !mn || !cf)
            return -1;
        /* stamps of new slots must not equal the current stamp */
        memset(fl + nw->flows_cap, 0,
               (size_t)(cap - nw->flows_cap) * sizeof *fl);
        nw->flows_cap = cap;
    }
    return nw->flows_used++;
}

/* The links of flow fi's route, kept since start_fair (a mesh's: its
 * state slot), borrowed until the pool grows. */
static inline int32_t flow_route(const net *nw, int32_t fi,
                                 const int32_t **links)
{
    if (nw->mesh) {
        *links = &nw->flows[fi].slot;
        return 1;
    }
    *links = nw->f_route + (size_t)fi * (size_t)nw->max_hops;
    return nw->flows[fi].hops;
}

static uint32_t next_stamp(net *nw)
{
    if (++nw->stamp == 0) { /* wrapped: clear every mark once */
        memset(nw->l_stamp, 0, (size_t)nw->fair_links * sizeof *nw->l_stamp);
        for (int32_t f = 0; f < nw->flows_used; f++)
            nw->flows[f].stamp = 0;
        nw->stamp = 1;
    }
    return nw->stamp;
}

/* Collects into comp_links / comp_flows the links and data-phase flows
 * reachable from link seed (not slack, not yet marked with st) through
 * shared links, slack links left out, marking them with st. O(component). */
static void collect(net *nw, int32_t seed, uint32_t st, int32_t *nlinks,
                    int32_t *nflows)
{
    int32_t h = nw->max_hops, nl = 0, nf = 0;
    nw->l_stamp[seed] = st;
    nw->comp_links[nl++] = seed;
    for (int32_t i = 0; i < nl; i++) {
        for (int32_t m = nw->l_head[nw->comp_links[i]]; m >= 0;
             m = nw->m_next[m]) {
            int32_t fi = m / h;
            flow *f = &nw->flows[fi];
            if (f->stamp == st)
                continue;
            f->stamp = st;
            nw->comp_flows[nf++] = fi;
            const int32_t *links;
            int32_t len = flow_route(nw, fi, &links);
            for (int32_t k = 0; k < len; k++) {
                if (!slack(nw, links[k]) && nw->l_stamp[links[k]] != st) {
                    nw->l_stamp[links[k]] = st;
                    nw->comp_links[nl++] = links[k];
                }
            }
        }
    }
    *nlinks = nl;
    *nflows = nf;
}

/* Notes that flows joined or left links (len of them) at now, for the
 * next net_settle; a change at a later time than the notes waiting
 * settles those first (a caller that did not). 0, or -1 when out of
 * memory. */
static int note(net *nw, const int32_t *links, int32_t len, double now)
{
    if (nw->npend > 0 && now != nw->pend_t && net_settle_now(nw))
        return -1;
    if (nw->npend + len > nw->pend_cap) {
        int32_t cap = nw->pend_cap ? nw->pend_cap : 256;
        while (cap < nw->npend + len)
            cap *= 2;
        int32_t *p = limit_realloc(nw->pend, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        nw->pend = p;
        nw->pend_cap = cap;
    }
    memcpy(nw->pend + nw->npend, links, (size_t)len * sizeof *links);
    nw->npend += len;
    nw->pend_t = now;
    return 0;
}

/* Progressive filling over the collected component: raise every unfixed
 * flow's rate together until a link saturates, fix the flows crossing it,
 * repeat. O(rounds * (links + memberships)) where rounds is the number of
 * distinct rates; then reschedules the flows whose rate changed. */
static int solve(net *nw, int32_t nl, int32_t nf, double now)
{
    int32_t h = nw->max_hops;
    for (int32_t i = 0; i < nl; i++) {
        int32_t l = nw->comp_links[i];
        nw->l_cap[l] = link_bw(nw, l);
        nw->l_unfixed[l] = nw->l_count[l];
    }
    for (int32_t i = 0; i < nf; i++)
        nw->flows[nw->comp_flows[i]].fixed = 0;
    int32_t left = nf;
    while (left > 0) {
        double share = INFINITY;
        for (int32_t i = 0; i < nl; i++) {
            int32_t l = nw->comp_links[i];
            if (nw->l_unfixed[l] > 0 && nw->l_cap[l] / nw->l_unfixed[l] < share)
                share = nw->l_cap[l] / nw->l_unfixed[l];
        }
        /* links within rounding of the minimum saturate in the same round,
         * so the number of rounds is the number of distinct rates */
        double limit = share * (1 + 1e-12);
        for (int32_t i = 0; i < nl; i++) {
            int32_t l = nw->comp_links[i];
            if (nw->l_unfixed[l] <= 0 ||
                nw->l_cap[l] / nw->l_unfixed[l] > limit)
                continue;
            for (int32_t m = nw->l_head[l]; m >= 0; m = nw->m_next[m]) {
                flow *f = &nw->flows[m / h];
                if (f->fixed)
                    continue;
                f->fixed = 1;
                f->new_rate = share;
                left--;
                const int32_t *links;
                int32_t len = flow_route(nw, m / h, &links);
                for (int32_t k = 0; k < len; k++) {
                    if (slack(nw, links[k]))
                        continue; /* not in the component */
                    nw->l_cap[links[k]] -= share;
                    nw->l_unfixed[links[k]]--;
                }
            }
        }
    }
    for (int32_t i = 0; i < nf; i++) {
        int32_t fi = nw->comp_flows[i];
        flow *f = &nw->flows[fi];
        if (f->new_rate == f->rate)
            continue;
        f->remaining -= f->rate * (now - f->updated);
        if (f->remaining < 0)
            f->remaining = 0;
        f->updated = now;
        f->rate = f->new_rate;
        f->version++;
        if (eq_push(nw->q, now + f->remaining / f->rate, EQ_NET, fi,
                    f->version))
            return -1;
    }
    return 0;
}

/* Puts flow fi, set up, on the links of its route at now (its data
 * phase; only the latency for a flow of no bytes), noting them for the
 * next net_settle. */
static int begin_data(net *nw, int32_t fi, double now)
{
    flow *f = &nw->flows[fi];
    f->updated = now;
    f->begin = now;
    while (!(f->remaining > 0)) { /* nothing to share: only the latency */
        f->state = FLOW_LATENCY;
        f->version++;
        if (eq_push(nw->q, now + f->latency, EQ_NET, fi, f->version))
            return -1;
        /* its data phase ended as it began: the connection's next flow
         * begins now (data_done never runs for it), else that one would
         * wait forever */
        if (f->succ < 0)
            return 0;
        fi = f->succ;
        f->succ = -1;
        f = &nw->flows[fi];
        f->updated = now;
        f->begin = now;
    }
    const int32_t *links;
    int32_t len = flow_route(nw, fi, &links);
    f->state = FLOW_DATA;
    int32_t h = nw->max_hops;
    for (int32_t k = 0; k < len; k++) {
        int32_t l = links[k], m = fi * h + k;
        nw->m_prev[m] = -1;
        nw->m_next[m] = nw->l_head[l];
        if (nw->l_head[l] >= 0)
            nw->m_prev[nw->l_head[l]] = m;
        nw->l_head[l] = m;
        if (nw->l_count[l]++ == 0)
            nw->l_since[l] = now;
    }
    return note(nw, links, len, now);
}

/* key >= 0: a transfer of connection key (net_start_conn), after flow
 * prev (-1: none) when prev is that connection's and still before the end
 * of its data phase. */
static int start_fair(net *nw, int32_t id, int32_t src, int32_t dst,
                      double bytes, double now, double *t_begin, int32_t key,
                      int32_t prev, int32_t *handle)
{
    int32_t fi = alloc_flow(nw);
    if (fi < 0)
        return -1;
    const int32_t *links;
    net_route_buf buf = {{-1}};
    int32_t len = run_route(nw, src, dst, &links, &buf);
    if (len == 1 && links[0] < 0)
        return -1; /* out of memory for a mesh slot */
    flow *f = &nw->flows[fi];
    f->stamp = 0; /* the search counter never hands out 0 */
    if (nw->mesh) {
        f->slot = links[0];
    } else { /* kept: a cluster's route is worked out, not stored */
        memcpy(nw->f_route + (size_t)fi * (size_t)nw->max_hops, links,
               (size_t)len * sizeof *links);
        f->hops = len;
    }
    double lat = 0;
    for (int32_t k = 0; k < len; k++) {
        if (!nw->mesh)
            touch(nw, links[k]);
        lat += link_lat(nw, links[k]);
        nw->ls[links[k]].carried += bytes;
    }
    f->remaining = bytes;
    f->rate = 0;
    f->updated = now;
    f->latency = lat;
    f->id = id;
    f->src = src;
    f->dst = dst;
    f->key = key;
    f->succ = -1;
    f->queued = 0;
    f->version++;
    *t_begin = now;
    if (handle)
        *handle = fi + 1;
    if (prev >= 0) {
        flow *p = &nw->flows[prev];
        if (p->key == key && p->src == src && p->dst == dst && p->succ < 0 &&
            (p->state == FLOW_DATA || p->state == FLOW_QUEUED)) {
            p->succ = fi; /* begins when p's data phase ends */
            f->state = FLOW_QUEUED;
            f->queued = 1;
            return 0;
        }
    }
    return begin_data(nw, fi, now);
}

/* The data phase of flow fi ended at now: leave the links (noted for the
 * next net_settle, which re-solves the flows that shared them), then wait
 * out the latency. */
static int32_t data_done(net *nw, int32_t fi, double now)
{
    flow *f = &nw->flows[fi];
    const int32_t *links;
    int32_t len = flow_route(nw, fi, &links);
    int32_t h = nw->max_hops;
    for (int32_t k = 0; k < len; k++) {
        int32_t l = links[k], m = fi * h + k;
        if (nw->m_prev[m] >= 0)
            nw->m_next[nw->m_prev[m]] = nw->m_next[m];
        else
            nw->l_head[l] = nw->m_next[m];
        if (nw->m_next[m] >= 0)
            nw->m_prev[nw->m_next[m]] = nw->m_prev[m];
        if (--nw->l_count[l] == 0)
            nw->ls[l].busy += now - nw->l_since[l];
    }
    /* the connection's next transfer takes over: the same route, so one
     * solve covers both */
    if (f->succ >= 0 && begin_data(nw, f->succ, now))
        nw->oom = 1;
    f->succ = -1;
    if (note(nw, links, len, now))
        nw->oom = 1;
    f->remaining = 0;
    f->version++;
    if (f->latency > 0) {
        f->state = FLOW_LATENCY;
        if (eq_push(nw->q, now + f->latency, EQ_NET, fi, f->version))
            nw->oom = 1;
        return -1;
    }
    f->state = FLOW_FREE;
    f->next_free = nw->free_flow;
    nw->free_flow = fi;
    nw->last_queued = f->queued;
    nw->last_begin = f->begin;
    return f->id;
}

int net_settle_now(net *nw)
{
    int32_t n = nw->npend;
    if (n == 0)
        return 0;
    nw->npend = 0;
    uint32_t st = next_stamp(nw);
    for (int32_t i = 0; i < n; i++) {
        int32_t l = nw->pend[i], nl, nf;
        if (slack(nw, l) || nw->l_stamp[l] == st)
            continue; /* never a bottleneck, or solved with an earlier one */
        collect(nw, l, st, &nl, &nf);
        if (solve(nw, nl, nf, nw->pend_t)) {
            nw->oom = 1;
            return -1;
        }
    }
    return 0;
}

int net_settle(net *nw)
{
    if (nw->npend == 0)
        return 0;
    eq_event next;
    if (eq_peek(nw->q, &next) == 0 && next.t <= nw->pend_t)
        return 0; /* more of this instant first */
    return net_settle_now(nw);
}

int net_start(net *nw, int32_t id, int32_t src, int32_t dst, double bytes,
              double now, double *t_begin)
{
    if (nw->oom)
        return -1;
    if (net_sharing_of(nw) == NET_FIFO)
        return start_fifo(nw, id, src, dst, bytes, now, t_begin, -1);
    return start_fair(nw, id, src, dst, bytes, now, t_begin, -1, -1, NULL);
}

int net_start_conn(net *nw, int32_t *conn, int32_t key, int32_t id, int32_t src,
                   int32_t dst, double bytes, double now, double *t_begin)
{
    if (nw->oom)
        return -1;
    if (net_sharing_of(nw) == NET_FIFO) /* the links are in order already */
        return start_fifo(nw, id, src, dst, bytes, now, t_begin, -1);
    /* a stale handle (another run's, or of a slot reused since) fails
     * start_fair's check of key and ends */
    int32_t prev = *conn > 0 && *conn <= nw->flows_used ? *conn - 1 : -1;
    return start_fair(nw, id, src, dst, bytes, now, t_begin, key, prev, conn);
}

int net_event_queued(const net *nw, double *t_begin)
{
    if (net_sharing_of(nw) == NET_FIFO || !nw->last_queued)
        return 0;
    *t_begin = nw->last_begin;
    return 1;
}

int32_t net_pair(net *nw, int32_t src, int32_t dst)
{
    if (nw->oom)
        return -1;
    return nw->mesh && net_sharing_of(nw) == NET_FIFO
               ? net_mesh_slot(nw, src, dst)
               : NET_NO_PAIR;
}

int net_start_pair(net *nw, int32_t pair, int32_t id, int32_t src, int32_t dst,
                   double bytes, double now, double *t_begin)
{
    if (nw->oom)
        return -1;
    if (pair < 0)
        return net_start(nw, id, src, dst, bytes, now, t_begin);
    double start, end = net_mesh_start(&nw->ls[pair], nw->mesh_bw, nw->mesh_lat,
                                       bytes, now, &start);
    *t_begin = start;
    return eq_push(nw->q, end, EQ_NET, id, 0);
}

int net_mesh_fifo(net *nw, net_lstat **slots, double *bandwidth,
                  double *latency)
{
    if (!nw->mesh || net_sharing_of(nw) != NET_FIFO || nw->oom)
        return 0;
    *slots = nw->ls;
    *bandwidth = nw->mesh_bw;
    *latency = nw->mesh_lat;
    return 1;
}

int32_t net_event(net *nw, const eq_event *ev)
{
    if (net_sharing_of(nw) == NET_FIFO)
        return ev->id; /* the link held it to the end */
    flow *f = &nw->flows[ev->id];
    if (ev->version != f->version)
        return -1;
    if (f->state == FLOW_DATA)
        return data_done(nw, ev->id, ev->t);
    assert(f->state == FLOW_LATENCY);
    f->state = FLOW_FREE;
    f->next_free = nw->free_flow;
    nw->free_flow = ev->id;
    nw->last_queued = f->queued;
    nw->last_begin = f->begin;
    return f->id;
}

static int cmp_link_info(const void *pa, const void *pb)
{
    const net_link_info *a = pa, *b = pb;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

int32_t net_links(const net *nw, net_link_info *out, int32_t max)
{
    int32_t n = 0;
    if (nw->mesh) {
        for (int32_t s = 0; s < nw->nslots; s++) {
            const lstat *st = &nw->ls[s];
            if (st->carried <= 0 && st->busy <= 0)
                continue;
            if (n < max)
                out[n] = (net_link_info){nw->slot_src[s], nw->slot_dst[s],
                                         nw->mesh_bw,     nw->mesh_lat,
                                         st->carried,     st->busy};
            n++;
        }
        if (n > 1 &&
            n <= max) /* slots are in order of first use: list by (a, b) */
            qsort(out, (size_t)n, sizeof *out, cmp_link_info);
        return n;
    }
    if (max <= 0) /* a count: coll_flows_ab asks on every cost */
        return nw->nlinks;
    for (int32_t l = 0; l < nw->nlinks; l++) {
        if (n < max)
            out[n] = (net_link_info){nw->links[l].a,
                                     nw->links[l].b,
                                     nw->links[l].bandwidth,
                                     nw->links[l].latency,
                                     nw->ls ? nw->ls[l].carried : 0,
                                     nw->ls ? nw->ls[l].busy : 0};
        n++;
    }
    return n;
}
