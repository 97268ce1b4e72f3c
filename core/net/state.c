/* Network run state: what net_begin sizes and resets for each run. A
 * network that is not a mesh keeps a record per link (and under FAIR the
 * per-link flow lists), allocated at its first run and kept; a run resets
 * only the links the run before it touched (net/flow.c marks them), so a
 * run on a few GPUs of a cluster of 100,000 costs what it uses, not its
 * 600,000 links. A mesh keeps no N*N state: a pair gets a state slot on its
 * first transfer, found again through an open-addressing hash of (src,
 * dst), so a run costs O(pairs it uses) however large the mesh. The
 * transfer models that use this state are net/flow.c. */
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
    limit_free(nw->pend);
    nw->pend = NULL;
    nw->npend = nw->pend_cap = 0;
    nw->flows = NULL;
    nw->f_route = nw->m_prev = nw->m_next = nw->comp_flows = NULL;
    nw->flows_cap = 0;
}

/* Here rather than in net.c, which frees a run's state through this file:
 * the run state reads the sharing rule, and net.c calls down into it. */
enum net_sharing net_sharing_of(const net *nw)
{
    if (nw->sharing_set)
        return nw->sharing;
    return nw->mesh ? NET_FIFO : NET_FAIR;
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
int32_t net_mesh_slot(net *nw, int32_t src, int32_t dst)
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
        nw->npend = 0;
    }
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
