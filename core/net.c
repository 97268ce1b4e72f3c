/* Network: links, routes and the FIFO transfer model.
 *
 * Routes are computed once per network by a breadth-first search from every
 * rank (O(ranks * (nodes + links))); neighbours are visited in increasing
 * node id, so among equally short routes the one through lower node ids
 * wins, deterministically. A mesh keeps its N*N links implicit: the link from
 * src to dst is number src * N + dst and no route table is stored. */
#include "net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct link {
    int32_t a, b;
    double bandwidth, latency;
} link;

struct net {
    int32_t nranks, nnodes;
    enum net_sharing sharing;
    /* mesh */
    int mesh;
    double mesh_bw, mesh_lat;
    /* explicit links and routes */
    link *links;
    int32_t nlinks, links_cap;
    int32_t *route_off;  /* nranks*nranks + 1 offsets into route_link */
    int32_t *route_link; /* link ids, in path order */
    /* run state, one entry per link (mesh: nranks * nranks) */
    double *free_at;
    double *carried;
    double *busy;
    int32_t state_links;
    eq *q;
};

net *net_new(int32_t nranks)
{
    net *nw = calloc(1, sizeof *nw);
    if (!nw)
        return NULL;
    nw->nranks = nranks;
    nw->nnodes = nranks;
    nw->sharing = NET_FIFO;
    return nw;
}

void net_free(net *nw)
{
    if (!nw)
        return;
    free(nw->links);
    free(nw->route_off);
    free(nw->route_link);
    free(nw->free_at);
    free(nw->carried);
    free(nw->busy);
    free(nw);
}

int32_t net_ranks(const net *nw) { return nw->nranks; }

static int check_figures(double bandwidth, double latency, ps_err *err)
{
    if (!(bandwidth > 0) || isnan(bandwidth))
        return ps_errf(err, "link bandwidth must be positive, got %g",
                       bandwidth);
    if (!(latency >= 0) || !isfinite(latency))
        return ps_errf(err, "link latency must be zero or positive, got %g",
                       latency);
    return PS_OK;
}

int net_set_mesh(net *nw, double bandwidth, double latency, ps_err *err)
{
    if (check_figures(bandwidth, latency, err))
        return PS_ERR;
    nw->mesh = 1;
    nw->mesh_bw = bandwidth;
    nw->mesh_lat = latency;
    return PS_OK;
}

int32_t net_add_switch(net *nw) { return nw->nnodes++; }

int net_add_link(net *nw, int32_t a, int32_t b, double bandwidth,
                 double latency, ps_err *err)
{
    if (check_figures(bandwidth, latency, err))
        return PS_ERR;
    if (a < 0 || b < 0 || a >= nw->nnodes || b >= nw->nnodes || a == b)
        return ps_errf(err, "link %d -> %d: no such pair of nodes", (int)a,
                       (int)b);
    if (nw->nlinks == nw->links_cap) {
        int32_t cap = nw->links_cap ? nw->links_cap * 2 : 64;
        link *l = realloc(nw->links, (size_t)cap * sizeof *l);
        if (!l)
            return ps_errf(err, "out of memory");
        nw->links = l;
        nw->links_cap = cap;
    }
    nw->links[nw->nlinks++] = (link){a, b, bandwidth, latency};
    return PS_OK;
}

void net_set_sharing(net *nw, enum net_sharing sharing)
{
    nw->sharing = sharing;
}

static int cmp_link_target(const void *pa, const void *pb, void *ctx);

/* Adjacency in CSR form, neighbours sorted by target node. */
typedef struct adjacency {
    int32_t *off;  /* nnodes + 1 */
    int32_t *link; /* link ids */
} adjacency;

static int build_adjacency(const net *nw, adjacency *adj)
{
    adj->off = calloc((size_t)nw->nnodes + 1, sizeof *adj->off);
    adj->link = malloc(((size_t)nw->nlinks + 1) * sizeof *adj->link);
    if (!adj->off || !adj->link)
        return PS_ERR;
    for (int32_t i = 0; i < nw->nlinks; i++)
        adj->off[nw->links[i].a + 1]++;
    for (int32_t i = 0; i < nw->nnodes; i++)
        adj->off[i + 1] += adj->off[i];
    int32_t *fill = malloc(((size_t)nw->nnodes + 1) * sizeof *fill);
    if (!fill)
        return PS_ERR;
    memcpy(fill, adj->off, (size_t)nw->nnodes * sizeof *fill);
    for (int32_t i = 0; i < nw->nlinks; i++)
        adj->link[fill[nw->links[i].a]++] = i;
    free(fill);
    /* insertion sort per node by target: degrees are small */
    for (int32_t n = 0; n < nw->nnodes; n++) {
        for (int32_t i = adj->off[n] + 1; i < adj->off[n + 1]; i++) {
            int32_t v = adj->link[i], j = i;
            while (j > adj->off[n] &&
                   cmp_link_target(&adj->link[j - 1], &v, (void *)nw) > 0) {
                adj->link[j] = adj->link[j - 1];
                j--;
            }
            adj->link[j] = v;
        }
    }
    return PS_OK;
}

static int cmp_link_target(const void *pa, const void *pb, void *ctx)
{
    const net *nw = ctx;
    int32_t a = nw->links[*(const int32_t *)pa].b;
    int32_t b = nw->links[*(const int32_t *)pb].b;
    return (a > b) - (a < b);
}

int net_finalize(net *nw, ps_err *err)
{
    if (nw->mesh)
        return PS_OK;
    int32_t n = nw->nranks;
    adjacency adj = {0};
    int32_t *via = malloc(((size_t)nw->nnodes + 1) * sizeof *via);
    int32_t *queue = malloc(((size_t)nw->nnodes + 1) * sizeof *queue);
    int32_t *path = malloc(((size_t)nw->nnodes + 1) * sizeof *path);
    free(nw->route_off);
    free(nw->route_link);
    nw->route_link = NULL;
    nw->route_off = calloc((size_t)n * (size_t)n + 1, sizeof *nw->route_off);
    int rc = PS_OK;
    size_t used = 0, cap = 0;
    if (!via || !queue || !path || !nw->route_off ||
        build_adjacency(nw, &adj)) {
        rc = ps_errf(err, "out of memory computing routes");
        goto done;
    }
    for (int32_t s = 0; s < n && rc == PS_OK; s++) {
        for (int32_t i = 0; i < nw->nnodes; i++)
            via[i] = -2;
        via[s] = -1;
        int32_t head = 0, tail = 0;
        queue[tail++] = s;
        while (head < tail) {
            int32_t u = queue[head++];
            for (int32_t k = adj.off[u]; k < adj.off[u + 1]; k++) {
                int32_t v = nw->links[adj.link[k]].b;
                if (via[v] != -2)
                    continue;
                via[v] = adj.link[k];
                /* ranks are endpoints: routes do not pass through a GPU
                 * unless the scenario's links make it a relay node */
                queue[tail++] = v;
            }
        }
        for (int32_t d = 0; d < n; d++) {
            nw->route_off[s * n + d] = (int32_t)used;
            if (d == s)
                continue;
            if (via[d] == -2) {
                rc = ps_errf(err, "no route from rank %d to rank %d", (int)s,
                             (int)d);
                break;
            }
            int32_t len = 0;
            for (int32_t v = d; v != s; v = nw->links[via[v]].a)
                path[len++] = via[v];
            if (used + (size_t)len > cap) {
                size_t ncap = cap ? cap * 2 : 1024;
                while (ncap < used + (size_t)len)
                    ncap *= 2;
                int32_t *r = realloc(nw->route_link, ncap * sizeof *r);
                if (!r) {
                    rc = ps_errf(err, "out of memory computing routes");
                    break;
                }
                nw->route_link = r;
                cap = ncap;
            }
            for (int32_t i = 0; i < len; i++)
                nw->route_link[used + (size_t)i] = path[len - 1 - i];
            used += (size_t)len;
        }
    }
    nw->route_off[(size_t)n * (size_t)n] = (int32_t)used;
done:
    free(adj.off);
    free(adj.link);
    free(via);
    free(queue);
    free(path);
    return rc;
}

/* The links of the route src -> dst: for a mesh one implicit link. */
static inline int32_t route(const net *nw, int32_t src, int32_t dst,
                            const int32_t **links, int32_t *one)
{
    if (nw->mesh) {
        *one = src * nw->nranks + dst;
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

double net_lone_time(const net *nw, int32_t src, int32_t dst, double bytes)
{
    if (src == dst)
        return 0;
    const int32_t *links;
    int32_t one, len = route(nw, src, dst, &links, &one);
    double lat = 0, bw = INFINITY;
    for (int32_t i = 0; i < len; i++) {
        lat += link_lat(nw, links[i]);
        if (link_bw(nw, links[i]) < bw)
            bw = link_bw(nw, links[i]);
    }
    return lat + bytes / bw;
}

void net_begin(net *nw, eq *q)
{
    nw->q = q;
    int32_t count = nw->mesh ? nw->nranks * nw->nranks : nw->nlinks;
    if (count != nw->state_links) {
        free(nw->free_at);
        free(nw->carried);
        free(nw->busy);
        nw->free_at = malloc(((size_t)count + 1) * sizeof(double));
        nw->carried = malloc(((size_t)count + 1) * sizeof(double));
        nw->busy = malloc(((size_t)count + 1) * sizeof(double));
        nw->state_links = count;
    }
    if (nw->free_at && nw->carried && nw->busy) {
        memset(nw->free_at, 0, (size_t)count * sizeof(double));
        memset(nw->carried, 0, (size_t)count * sizeof(double));
        memset(nw->busy, 0, (size_t)count * sizeof(double));
    }
}

int net_start(net *nw, int32_t id, int32_t src, int32_t dst, double bytes,
              double now, double *t_begin)
{
    if (!nw->free_at)
        return -1;
    const int32_t *links;
    int32_t one, len = route(nw, src, dst, &links, &one);
    double start = now, lat = 0, bw = INFINITY;
    for (int32_t i = 0; i < len; i++) {
        int32_t l = links[i];
        if (nw->free_at[l] > start)
            start = nw->free_at[l];
        lat += link_lat(nw, l);
        if (link_bw(nw, l) < bw)
            bw = link_bw(nw, l);
    }
    double end = start + lat + bytes / bw;
    for (int32_t i = 0; i < len; i++) {
        int32_t l = links[i];
        nw->free_at[l] = end;
        nw->carried[l] += bytes;
        nw->busy[l] += end - start;
    }
    *t_begin = start;
    return eq_push(nw->q, end, NET_EVENT, id, 0);
}

int32_t net_event(net *nw, const eq_event *ev)
{
    (void)nw;
    return ev->id;
}

int32_t net_links(const net *nw, net_link_info *out, int32_t max)
{
    int32_t n = 0;
    if (nw->mesh) {
        int32_t N = nw->nranks;
        for (int32_t l = 0; l < N * N && nw->carried; l++) {
            if (nw->carried[l] <= 0 && nw->busy[l] <= 0)
                continue;
            if (n < max)
                out[n] = (net_link_info){l / N, l % N, nw->mesh_bw,
                                         nw->mesh_lat, nw->carried[l],
                                         nw->busy[l]};
            n++;
        }
        return n;
    }
    for (int32_t l = 0; l < nw->nlinks; l++) {
        if (n < max)
            out[n] = (net_link_info){nw->links[l].a, nw->links[l].b,
                                     nw->links[l].bandwidth,
                                     nw->links[l].latency,
                                     nw->carried ? nw->carried[l] : 0,
                                     nw->busy ? nw->busy[l] : 0};
        n++;
    }
    return n;
}
