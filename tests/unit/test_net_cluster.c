/* The cluster's routes (net/cluster.c: worked out from the two ranks, no
 * table) against the per-pair implementation: on small clusters of several
 * shapes (nodes x GPUs per node, NICs per node, so GPUs per rail, and
 * oversubscription) the same links, copied into a network of explicit
 * links whose routes net_finalize computes pair by pair, give the same
 * route for every pair, the same path figures and, under both sharing
 * models, the same arrival times bit for bit; on clusters of 16,384 and
 * 100,000 GPUs the routes from a few ranks to every rank equal those of a
 * breadth-first search written here. A run resets the links the run
 * before it touched, also after a run that stopped half-way. */
#include "harness.h"
#include "net/net.h"
#include "net_drive.h"

#include <stdlib.h>

typedef struct shape {
    int32_t nodes, gpus, nics;
    double over;
} shape;

static net *build(const shape *s)
{
    net_cluster c = {.nodes = s->nodes,
                     .gpus_per_node = s->gpus,
                     .nics_per_node = s->nics,
                     .intra_bw = 370e9,
                     .intra_lat = 1.5e-6,
                     .inter_bw = 48e9,
                     .inter_lat = 5e-6,
                     .oversubscription = s->over};
    net *nw = net_new(s->nodes * s->gpus);
    ps_err err;
    CHECK_INT(net_build_cluster(nw, &c, &err), 0);
    return nw;
}

/* The links of nw (a cluster) in id order, and the number of nodes. */
static net_link_info *links_of(const net *nw, int32_t *nl, int32_t *nnodes)
{
    *nl = net_links(nw, NULL, 0);
    net_link_info *li = malloc((size_t)*nl * sizeof *li);
    CHECK_INT(net_links(nw, li, *nl), *nl);
    *nnodes = 0;
    for (int32_t i = 0; i < *nl; i++) {
        if (li[i].a >= *nnodes)
            *nnodes = li[i].a + 1;
        if (li[i].b >= *nnodes)
            *nnodes = li[i].b + 1;
    }
    return li;
}

/* The same links as the cluster nw, as explicit links with the per-pair
 * route table of net_finalize. */
static net *as_table(const net *nw)
{
    int32_t nl, nnodes;
    net_link_info *li = links_of(nw, &nl, &nnodes);
    net *t = net_new(net_ranks(nw));
    ps_err err;
    while (net_add_switch(t) < nnodes - 1)
        ;
    int bad = 0;
    for (int32_t i = 0; i < nl; i++)
        bad += net_add_link(t, li[i].a, li[i].b, li[i].bandwidth, li[i].latency,
                            &err) != 0;
    CHECK_INT(bad, 0);
    CHECK_INT(net_finalize(t, &err), 0);
    net_set_sharing(t, net_sharing_of(nw));
    free(li);
    return t;
}

/* Transfers between pseudo-random pairs at pseudo-random times, in time
 * order (a linear congruential generator: the same every run). */
static void random_transfers(int32_t n, start *st, int count)
{
    uint64_t x = 12345;
    double t = 0;
    for (int i = 0; i < count; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        t += (double)(x >> 40 & 0xff) * 1e-7;
        int32_t a = (int32_t)((x >> 8) % (uint64_t)n);
        int32_t b = (int32_t)((x >> 24) % (uint64_t)n);
        st[i] = (start){t, a, b == a ? (a + 1) % n : b,
                        (double)(1 + (x >> 48 & 0xfff)) * 4096};
    }
}

/* Every pair's route and path figures, then transfers under both
 * sharing models, cluster against table. */
static void compare(const shape *s)
{
    net *cl = build(s), *tb = as_table(cl);
    int32_t n = net_ranks(cl), diff = 0, pairs = 0;
    for (int32_t a = 0; a < n; a++) {
        for (int32_t b = 0; b < n; b++) {
            const int32_t *lc, *lt;
            net_route_buf bc, bt;
            int32_t len = net_route(cl, a, b, &lc, &bc);
            diff += len != net_route(tb, a, b, &lt, &bt);
            for (int32_t k = 0; k < len; k++)
                diff += lc[k] != lt[k];
            double lat_c, bw_c, lat_t, bw_t;
            net_path(cl, a, b, &lat_c, &bw_c);
            net_path(tb, a, b, &lat_t, &bw_t);
            diff += lat_c != lat_t || bw_c != bw_t;
            pairs++;
        }
    }
    CHECK_INT(pairs, (int64_t)n * n);
    CHECK_INT(diff, 0);
    enum { COUNT = 300 };
    static start st[COUNT];
    static double at_c[COUNT], at_t[COUNT];
    random_transfers(n, st, n > 1 ? COUNT : 0);
    for (int fair = 0; fair < 2 && n > 1; fair++) {
        net_set_sharing(cl, fair ? NET_FAIR : NET_FIFO);
        net_set_sharing(tb, fair ? NET_FAIR : NET_FIFO);
        drive(cl, st, COUNT, at_c);
        drive(tb, st, COUNT, at_t);
        int late = 0, unset = 0;
        for (int i = 0; i < COUNT; i++) {
            late += at_c[i] != at_t[i];
            unset += isnan(at_c[i]);
        }
        CHECK_INT(late, 0);
        CHECK_INT(unset, 0);
    }
    net_free(cl);
    net_free(tb);
}

static void test_small_clusters(void)
{
    static const shape shapes[] = {
        {1, 1, 0, 1},   /* one GPU */
        {1, 8, 2, 1},   /* one node: NVSwitch only */
        {2, 1, 0, 1},   /* one GPU a node: NICs only */
        {2, 4, 2, 1},   /* two GPUs a NIC */
        {3, 8, 8, 2},   /* a NIC a GPU (a rail each), oversubscribed */
        {4, 8, 4, 1},   /* DGX H100 with 4 NDR NICs */
        {5, 6, 4, 1.5}, /* NICs that do not divide the GPUs: 2,1,2,1 */
        {3, 5, 1, 3},   /* one NIC for 5 GPUs */
        {16, 8, 8, 1},  /* 128 GPUs: 16,384 pairs */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        compare(&shapes[i]);
}

/* A breadth-first search from rank s over the links li, sorted by (from,
 * to) in order[] with node u's links at order[first[u] .. first[u+1]):
 * neighbours in increasing node id, the first to reach a node wins, as
 * net_finalize's; via[v] is the link that reached v (-1: none). */
static void search(int32_t s, const net_link_info *li, const int32_t *order,
                   const int32_t *first, int32_t nnodes, int32_t *via,
                   int32_t *queue)
{
    for (int32_t v = 0; v < nnodes; v++)
        via[v] = -1;
    int32_t head = 0, tail = 0;
    queue[tail++] = s;
    via[s] = -2;
    while (head < tail) {
        int32_t u = queue[head++];
        for (int32_t k = first[u]; k < first[u + 1]; k++) {
            int32_t v = li[order[k]].b;
            if (via[v] == -1) {
                via[v] = order[k];
                queue[tail++] = v;
            }
        }
    }
}

static const net_link_info *sort_links;

static int by_ends(const void *pa, const void *pb)
{
    const net_link_info *a = &sort_links[*(const int32_t *)pa];
    const net_link_info *b = &sort_links[*(const int32_t *)pb];
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

/* Routes of a large cluster from a few ranks to every rank against
 * search(). */
static void test_large_cluster(const shape *s, const int32_t *from, int nfrom)
{
    net *nw = build(s);
    int32_t n = net_ranks(nw), nl, nnodes;
    CHECK_INT(n, s->nodes * s->gpus);
    net_link_info *li = links_of(nw, &nl, &nnodes);
    CHECK_INT(nl, s->nodes * (4 * s->gpus + 2 * s->nics) + 1);
    int32_t *order = malloc((size_t)nl * sizeof *order);
    int32_t *first = calloc((size_t)nnodes + 1, sizeof *first);
    int32_t *via = malloc((size_t)nnodes * sizeof *via);
    int32_t *queue = malloc((size_t)nnodes * sizeof *queue);
    for (int32_t i = 0; i < nl; i++) {
        order[i] = i;
        first[li[i].a + 1]++;
    }
    for (int32_t u = 0; u < nnodes; u++)
        first[u + 1] += first[u];
    sort_links = li;
    qsort(order, (size_t)nl, sizeof *order, by_ends);
    int64_t diff = 0, routes = 0;
    for (int f = 0; f < nfrom; f++) {
        search(from[f], li, order, first, nnodes, via, queue);
        for (int32_t d = 0; d < n; d++) {
            int32_t path[16], len = 0;
            for (int32_t v = d; v != from[f] && len < 16 && via[v] >= 0;
                 v = li[via[v]].a)
                path[len++] = via[v];
            const int32_t *links;
            net_route_buf buf;
            int32_t got = net_route(nw, from[f], d, &links, &buf);
            diff += got != len;
            for (int32_t k = 0; k < len && got == len; k++)
                diff += links[k] != path[len - 1 - k];
            routes++;
        }
    }
    CHECK_INT(routes, (int64_t)nfrom * n);
    CHECK_INT(diff, 0);
    free(order);
    free(first);
    free(via);
    free(queue);
    free(li);
    net_free(nw);
}

/* A run starts from a clean network whatever the run before it touched,
 * also when that run stopped with transfers in flight; net_links reports
 * the last run's links only. */
static void test_reset_between_runs(void)
{
    static const shape s = {4, 8, 4, 2};
    for (int fair = 0; fair < 2; fair++) {
        net *nw = build(&s), *fresh = build(&s);
        net_set_sharing(nw, fair ? NET_FAIR : NET_FIFO);
        net_set_sharing(fresh, fair ? NET_FAIR : NET_FIFO);
        start one[] = {{0, 0, 8, 1e6}, {0, 1, 9, 1e6}, {0, 2, 3, 1e6}};
        start two[] = {{0, 16, 24, 1e6}, {0, 17, 25, 2e6}, {1e-6, 0, 24, 1e6}};
        double at[3], want[3];
        drive(nw, one, 3, at);
        /* a run that stops half-way: its flows stay on their links */
        eq q;
        eq_init(&q);
        net_begin(nw, &q);
        double tb;
        CHECK_INT(net_start(nw, 0, 0, 8, 1e9, 0, &tb), 0);
        CHECK_INT(net_start(nw, 1, 4, 12, 1e9, 0, &tb), 0);
        eq_free(&q);
        drive(nw, two, 3, at);
        drive(fresh, two, 3, want);
        for (int i = 0; i < 3; i++)
            CHECK(at[i] == want[i]);
        int32_t nl = net_links(nw, NULL, 0), used = 0, same = 0;
        net_link_info *a = malloc((size_t)nl * sizeof *a);
        net_link_info *b = malloc((size_t)nl * sizeof *b);
        net_links(nw, a, nl);
        net_links(fresh, b, nl);
        for (int32_t i = 0; i < nl; i++) {
            used += a[i].bytes > 0;
            same += a[i].bytes == b[i].bytes && a[i].busy == b[i].busy;
        }
        CHECK_INT(same, nl);
        /* 16 -> 24: five links; 17 -> 25 shares NIC 0's uplink, the core
         * and NIC 0's downlink with it: two more; 0 -> 24 two more */
        CHECK_INT(used, 9);
        free(a);
        free(b);
        net_free(nw);
        net_free(fresh);
    }
}

/* What a cluster refuses and where it has no more limit than a mesh. */
static void test_cluster_limits(void)
{
    static const shape s = {2, 4, 0, 1};
    net *nw = build(&s);
    ps_err err;
    CHECK_INT(net_add_link(nw, 0, 1, 1, 0, &err), PS_ERR);
    CHECK_STR(err.msg, "link 0 -> 1: a cluster takes no more links");
    CHECK_INT(net_finalize(nw, &err), 0); /* nothing to compute */
    net_cluster again = {
        .nodes = 2, .gpus_per_node = 4, .intra_bw = 1, .inter_bw = 1};
    CHECK_INT(net_build_cluster(nw, &again, &err), PS_ERR);
    CHECK_STR(err.msg, "cluster: the network already has links");
    CHECK_INT(net_nics_per_node(nw, 4), 4);
    CHECK_INT(net_nics_per_node(nw, 8), 0);
    net_free(nw);
    /* what the memory stop says building 100,000 GPUs takes: 600,001
     * links of 24 bytes and a slack mark, 212,502 nodes' bandwidths */
    net_cluster big = {.nodes = 12500, .gpus_per_node = 8, .nics_per_node = 8};
    CHECK_INT(net_cluster_bytes(&big), 600001 * 25 + 212502 * 8);
}

int main(void)
{
    test_small_clusters();
    static const int32_t from16k[] = {0, 7, 8, 9999, 16383};
    test_large_cluster(&(shape){2048, 8, 4, 1}, from16k, 5);
    static const int32_t from100k[] = {0, 5, 54321, 99999};
    test_large_cluster(&(shape){12500, 8, 8, 1}, from100k, 4);
    test_reset_between_runs();
    test_cluster_limits();
    return harness_done();
}
