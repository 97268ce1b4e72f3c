/* Network at run time: the FIFO and max-min fair transfer models, mesh
 * state slots, and the per-link figures of the last run (net_links). The
 * static topology and routes are in net/net.c; the private record they share
 * is in net/impl.h.
 *
 * A mesh keeps no N*N state: at run time a pair gets a state slot on its
 * first transfer, found again through an open-addressing hash of (src,
 * dst), so a run costs O(pairs it uses) however large the mesh.
 *
 * FAIR keeps, per link, an intrusive doubly linked list of the flows in
 * their data phase (membership node = flow * max_route + hop), so a flow
 * joins and leaves its links in O(route length). When a flow starts or ends,
 * the connected component of flows reachable from its links through shared
 * links is collected and re-solved by progressive filling; only flows whose
 * rate changed get a new completion event, and their old events go stale by
 * version (eq_event.version). A connection's flows (net_start_conn) form
 * a chain: a queued flow joins its links when the data phase of the one
 * before it ends, in the same re-solve. All run-time arrays are sized in
 * net_begin or grown geometrically, so the per-event path does not allocate in
 * steady state. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"
#include "net/impl.h"
#include "net/net.h"

static void free_fair(net *nw)
{
    limit_free(nw->l_head);
    limit_free(nw->l_count);
    limit_free(nw->l_stamp);
    limit_free(nw->l_since);
    limit_free(nw->l_cap);
    limit_free(nw->l_unfixed);
    limit_free(nw->comp_links);
    nw->l_head = nw->l_count = nw->l_unfixed = nw->comp_links = NULL;
    nw->l_stamp = NULL;
    nw->l_since = nw->l_cap = NULL;
    nw->fair_links = 0;
}

static void free_flows(net *nw)
{
    limit_free(nw->flows);
    limit_free(nw->f_route);
    limit_free(nw->m_prev);
    limit_free(nw->m_next);
    limit_free(nw->comp_flows);
    nw->flows = NULL;
    nw->f_route = nw->m_prev = nw->m_next = nw->comp_flows = NULL;
    nw->flows_cap = 0;
}

void net_run_free(net *nw)
{
    limit_free(nw->ls);
    limit_free(nw->l_dirty);
    limit_free(nw->dirty);
    limit_free(nw->mkey);
    limit_free(nw->mval);
    limit_free(nw->slot_src);
    limit_free(nw->slot_dst);
    free_fair(nw);
    free_flows(nw);
}

/* ------------------------------------------------------------------ */
/* Run state                                                           */

/* Sizes the FAIR arrays for count links (or mesh slots); with full, or
 * when they are new, every entry is reset, else only those of the links
 * the last run touched are, by reset_touched. */
static int size_fair(net *nw, int32_t count, int full)
{
    if (nw->fair_links != count || !nw->l_head) {
        full = 1;
        free_fair(nw);
        size_t n = (size_t)count + 1;
        nw->l_head = limit_malloc(n * sizeof *nw->l_head);
        nw->l_count = limit_malloc(n * sizeof *nw->l_count);
        nw->l_stamp = limit_malloc(n * sizeof *nw->l_stamp);
        nw->l_since = limit_malloc(n * sizeof *nw->l_since);
        nw->l_cap = limit_malloc(n * sizeof *nw->l_cap);
        nw->l_unfixed = limit_malloc(n * sizeof *nw->l_unfixed);
        nw->comp_links = limit_malloc(n * sizeof *nw->comp_links);
        if (!nw->l_head || !nw->l_count || !nw->l_stamp || !nw->l_since ||
            !nw->l_cap || !nw->l_unfixed || !nw->comp_links) {
            free_fair(nw);
            return -1;
        }
        nw->fair_links = count;
    }
    if (!full)
        return 0;
    memset(nw->l_head, 0xff, (size_t)count * sizeof *nw->l_head);
    memset(nw->l_count, 0, (size_t)count * sizeof *nw->l_count);
    memset(nw->l_stamp, 0, (size_t)count * sizeof *nw->l_stamp);
    return 0;
}

/* Not a mesh: link l's run state is about to change; the first time in a
 * run, it goes on the list that the next net_begin resets. */
static inline void touch(net *nw, int32_t l)
{
    if (!nw->l_dirty[l]) {
        nw->l_dirty[l] = 1;
        nw->dirty[nw->ndirty++] = l;
    }
}

/* Not a mesh: puts the links the last run touched back in their initial
 * state (the FAIR arrays too when they are sized for the links), so that
 * a run costs O(links it uses), not O(links): a few GPUs of a cluster of
 * 100,000 do not reset its 600,000 links. */
static void reset_touched(net *nw)
{
    int fair = nw->l_head && nw->fair_links == nw->nlinks;
    for (int32_t i = 0; i < nw->ndirty; i++) {
        int32_t l = nw->dirty[i];
        memset(&nw->ls[l], 0, sizeof nw->ls[l]);
        nw->l_dirty[l] = 0;
        if (fair) {
            nw->l_head[l] = -1;
            nw->l_count[l] = 0;
            nw->l_stamp[l] = 0;
        }
    }
    nw->ndirty = 0;
}

/* Not a mesh: (re)allocates the per-link run state for nlinks links, all
 * reset; 0, or -1 when out of memory (the memory stop then says what it
 * needs). */
static int alloc_link_state(net *nw)
{
    size_t n = (size_t)nw->nlinks + 1;
    limit_free(nw->ls);
    limit_free(nw->l_dirty);
    limit_free(nw->dirty);
    nw->ls = limit_calloc(n, sizeof *nw->ls);
    nw->l_dirty = limit_calloc(n, 1);
    nw->dirty = limit_malloc(n * sizeof *nw->dirty);
    nw->ndirty = 0;
    nw->state_links = nw->nlinks;
    if (nw->ls && nw->l_dirty && nw->dirty)
        return 0;
    limit_free(nw->ls);
    limit_free(nw->l_dirty);
    limit_free(nw->dirty);
    nw->ls = NULL;
    nw->l_dirty = NULL;
    nw->dirty = NULL;
    if (limit_stopped() == LIMIT_MEMORY) {
        char b[64], line[200];
        snprintf(line, sizeof line,
                 "the network's link state needs about %s (%d links)",
                 limit_format_bytes(net_run_bytes(nw), b, sizeof b),
                 (int)nw->nlinks);
        limit_note_need(line);
    }
    return -1;
}

size_t net_run_bytes(const net *nw)
{
    if (nw->mesh) /* per pair used: net_pair_bytes */
        return 0;
    size_t b = sizeof(lstat) + 1 + sizeof(int32_t);
    if (net_sharing_of(nw) == NET_FAIR) /* size_fair's arrays */
        b += 4 * sizeof(int32_t) + sizeof(uint32_t) + 2 * sizeof(double);
    return b * ((size_t)nw->nlinks + 1);
}

/* Doubles the mesh's slot capacity: ls, slot_src / slot_dst and, when
 * allocated for it, the FAIR arrays, new entries in their initial state.
 * Returns 0, or -1 when out of memory (the capacity is then unchanged). */
static int mesh_grow(net *nw)
{
    int32_t old = nw->state_links;
    if (old > INT32_MAX / 2 - 1)
        return -1;
    int32_t cap = old ? old * 2 : 64;
    size_t n = (size_t)cap + 1, add = (size_t)(cap - old);
    lstat *ls = limit_realloc(nw->ls, n * sizeof *ls);
    if (ls)
        nw->ls = ls;
    int32_t *a = limit_realloc(nw->slot_src, n * sizeof *a);
    if (a)
        nw->slot_src = a;
    int32_t *b = limit_realloc(nw->slot_dst, n * sizeof *b);
    if (b)
        nw->slot_dst = b;
    if (!ls || !a || !b)
        return -1;
    memset(nw->ls + old, 0, add * sizeof *nw->ls);
    if (nw->l_head && nw->fair_links == old) {
        int32_t *h = limit_realloc(nw->l_head, n * sizeof *h);
        if (h)
            nw->l_head = h;
        int32_t *c = limit_realloc(nw->l_count, n * sizeof *c);
        if (c)
            nw->l_count = c;
        uint32_t *st = limit_realloc(nw->l_stamp, n * sizeof *st);
        if (st)
            nw->l_stamp = st;
        double *si = limit_realloc(nw->l_since, n * sizeof *si);
        if (si)
            nw->l_since = si;
        double *cp = limit_realloc(nw->l_cap, n * sizeof *cp);
        if (cp)
            nw->l_cap = cp;
        int32_t *u = limit_realloc(nw->l_unfixed, n * sizeof *u);
        if (u)
            nw->l_unfixed = u;
        int32_t *cl = limit_realloc(nw->comp_links, n * sizeof *cl);
        if (cl)
            nw->comp_links = cl;
        if (!h || !c || !st || !si || !cp || !u || !cl)
            return -1;
        memset(nw->l_head + old, 0xff, add * sizeof *nw->l_head);
        memset(nw->l_count + old, 0, add * sizeof *nw->l_count);
        memset(nw->l_stamp + old, 0, add * sizeof *nw->l_stamp);
        nw->fair_links = cap;
    }
    nw->state_links = cap;
    return 0;
}

static uint32_t mesh_hash(int64_t key, int32_t mask)
{
    return (uint32_t)(((uint64_t)key * 0x9E3779B97F4A7C15u) >> 32) &
           (uint32_t)mask;
}

/* Doubles the slot hash table (or makes the first one); -1 when out of
 * memory. */
static int mesh_rehash(net *nw)
{
    if (nw->mcap > INT32_MAX / 2)
        return -1;
    int32_t cap = nw->mcap ? nw->mcap * 2 : 256;
    int64_t *key = limit_malloc((size_t)cap * sizeof *key);
    int32_t *val = limit_malloc((size_t)cap * sizeof *val);
    if (!key || !val) {
        limit_free(key);
        limit_free(val);
        return -1;
    }
    memset(key, 0xff, (size_t)cap * sizeof *key);
    for (int32_t i = 0; i < nw->mcap; i++) {
        if (nw->mkey[i] < 0)
            continue;
        uint32_t j = mesh_hash(nw->mkey[i], cap - 1);
        while (key[j] >= 0)
            j = (j + 1) & (uint32_t)(cap - 1);
        key[j] = nw->mkey[i];
        val[j] = nw->mval[i];
    }
    limit_free(nw->mkey);
    limit_free(nw->mval);
    nw->mkey = key;
    nw->mval = val;
    nw->mcap = cap;
    return 0;
}

/* The state slot of the mesh link src -> dst, handing out the next one on
 * first use; -1 when out of memory. O(1) expected; allocates only when the
 * run uses more pairs than any run before it. */
static int32_t mesh_slot(net *nw, int32_t src, int32_t dst)
{
    int64_t key = (int64_t)src * nw->nranks + dst;
    uint32_t i = mesh_hash(key, nw->mcap - 1);
    for (; nw->mkey[i] >= 0; i = (i + 1) & (uint32_t)(nw->mcap - 1))
        if (nw->mkey[i] == key)
            return nw->mval[i];
    if (nw->nslots == nw->state_links && mesh_grow(nw))
        return -1;
    if ((int64_t)(nw->nslots + 1) * 2 > nw->mcap) {
        if (mesh_rehash(nw))
            return -1;
        i = mesh_hash(key, nw->mcap - 1);
        while (nw->mkey[i] >= 0)
            i = (i + 1) & (uint32_t)(nw->mcap - 1);
    }
    int32_t slot = nw->nslots++;
    nw->mkey[i] = key;
    nw->mval[i] = slot;
    nw->slot_src[slot] = src;
    nw->slot_dst[slot] = dst;
    return slot;
}

/* route() for the run-time path: a mesh link is its state slot (in buf;
 * -1 when out of memory). */
static inline int32_t run_route(net *nw, int32_t src, int32_t dst,
                                const int32_t **links, net_route_buf *buf)
{
    if (nw->mesh) {
        buf->link[0] = mesh_slot(nw, src, dst);
        *links = buf->link;
        return 1;
    }
    return route(nw, src, dst, links, buf);
}

void net_begin(net *nw, eq *q)
{
    nw->q = q;
    nw->oom = 0;
    if (nw->mesh) {
        /* slots from the last run are forgotten; capacity is kept */
        if ((!nw->ls && mesh_grow(nw)) || (!nw->mkey && mesh_rehash(nw))) {
            nw->oom = 1;
            return;
        }
        memset(nw->mkey, 0xff, (size_t)nw->mcap * sizeof *nw->mkey);
        nw->nslots = 0;
    }
    int32_t count = nw->mesh ? nw->state_links : nw->nlinks;
    int full = nw->mesh; /* a mesh resets its slots in use, all of them */
    if (!nw->mesh && (count != nw->state_links || !nw->ls || !nw->l_dirty)) {
        if (alloc_link_state(nw)) {
            nw->oom = 1;
            return;
        }
        full = 1;
    } else if (!nw->mesh) {
        reset_touched(nw);
    } else {
        memset(nw->ls, 0, (size_t)count * sizeof *nw->ls);
    }
    if (net_sharing_of(nw) == NET_FAIR) {
        if (size_fair(nw, count, full))
            nw->oom = 1;
        if (nw->flows_hops != nw->max_hops) /* memberships are per hop */
            free_flows(nw);
        nw->flows_hops = nw->max_hops;
        nw->free_flow = -1;
        nw->flows_used = 0;
    }
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
 * reachable from the seed links through shared links, slack links left
 * out. O(component). */
static void collect(net *nw, const int32_t *seed, int32_t nseed,
                    int32_t *nlinks, int32_t *nflows)
{
    uint32_t st = next_stamp(nw);
    int32_t h = nw->max_hops, nl = 0, nf = 0;
    for (int32_t i = 0; i < nseed; i++) {
        if (!slack(nw, seed[i]) && nw->l_stamp[seed[i]] != st) {
            nw->l_stamp[seed[i]] = st;
            nw->comp_links[nl++] = seed[i];
        }
    }
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
 * phase; only the latency for a flow of no bytes). With solve, re-solves
 * its component; without, the caller does. */
static int begin_data(net *nw, int32_t fi, double now, int re_solve)
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
    if (!re_solve)
        return 0;
    int32_t nl, nf;
    collect(nw, links, len, &nl, &nf);
    return solve(nw, nl, nf, now);
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
    return begin_data(nw, fi, now, 1);
}

/* The data phase of flow fi ended at now: leave the links, re-solve the
 * flows that shared them, then wait out the latency. */
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
    if (f->succ >= 0 && begin_data(nw, f->succ, now, 0))
        nw->oom = 1;
    f->succ = -1;
    int32_t nl, nf;
    collect(nw, links, len, &nl, &nf);
    if (solve(nw, nl, nf, now))
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

size_t net_pair_bytes(const net *nw)
{
    if (!nw->mesh)
        return 0;
    /* mesh_grow's arrays (the FAIR ones when allocated) and mesh_rehash's
     * table, kept at most half full: two entries a slot */
    size_t b = sizeof(lstat) + 2 * sizeof(int32_t) +
               2 * (sizeof(int64_t) + sizeof(int32_t));
    if (nw->l_head)
        b += 2 * sizeof(int32_t) + sizeof(uint32_t) + 2 * sizeof(double);
    return b;
}

int32_t net_pair(net *nw, int32_t src, int32_t dst)
{
    if (nw->oom)
        return -1;
    return nw->mesh && net_sharing_of(nw) == NET_FIFO ? mesh_slot(nw, src, dst)
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
