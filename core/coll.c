/* Collectives: names, input checks, cost models and `auto`, the run, and the
 * data replay that checks every rank's result against a float64 reference.
 * The generators live in coll_algo.c. */
#include "coll.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_algo.h"

/* Chunk counts the cost model may pick for the chunked algorithms: NCCL's
 * chunks are hundreds of KB, so a bound keeps programs small for huge
 * messages without changing the optimum at realistic sizes. */
#define COLL_MAX_CHUNKS 256

static const char *const op_names[COLL_NOPS] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"};

static const char *const algo_names[COLL_NALGOS] = {
    "ring",   "tree",         "double_binary_tree", "halving_doubling",
    "direct", "hierarchical", "pipeline",           "scatter_allgather"};

/* Algorithms per op, in the order they are listed and tried by auto (ties
 * go to the earlier one). */
static const int op_algos[COLL_NOPS][7] = {
    [COLL_ALLREDUCE] = {COLL_RING, COLL_TREE, COLL_DOUBLE_BINARY_TREE,
                        COLL_HALVING_DOUBLING, COLL_DIRECT, COLL_HIERARCHICAL,
                        -1},
    [COLL_REDUCE_SCATTER] = {COLL_RING, COLL_HALVING_DOUBLING, COLL_DIRECT, -1},
    [COLL_ALLGATHER] = {COLL_RING, COLL_HALVING_DOUBLING, COLL_DIRECT, -1},
    [COLL_BROADCAST] = {COLL_TREE, COLL_PIPELINE, COLL_SCATTER_ALLGATHER, -1},
    [COLL_REDUCE] = {COLL_TREE, -1},
};

const char *coll_op_name(enum coll_op op)
{
    return (unsigned)op < COLL_NOPS ? op_names[op] : "?";
}

const char *coll_algo_name(int algo)
{
    if (algo == COLL_AUTO)
        return "auto";
    return algo >= 0 && algo < COLL_NALGOS ? algo_names[algo] : "?";
}

int coll_algo_applies(enum coll_op op, int algo)
{
    if ((unsigned)op >= COLL_NOPS)
        return 0;
    for (const int *a = op_algos[op]; *a >= 0; a++)
        if (*a == algo)
            return 1;
    return 0;
}

double coll_busbw_factor(enum coll_op op, int32_t n)
{
    switch (op) {
    case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COLL_REDUCE_SCATTER:
    case COLL_ALLGATHER: return (double)(n - 1) / n;
    default: return 1;
    }
}

int coll_parse_op(const char *name, enum coll_op *op, ps_err *err)
{
    for (int i = 0; i < COLL_NOPS; i++)
        if (name && strcmp(name, op_names[i]) == 0) {
            *op = (enum coll_op)i;
            return PS_OK;
        }
    return ps_errf(err,
                   "unknown collective op '%s' (expected allreduce, "
                   "reduce_scatter, allgather, broadcast, reduce)",
                   name ? name : "");
}

/* "ring, tree, ..., auto" for op into buf. */
static void list_algos(enum coll_op op, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (const int *a = op_algos[op]; *a >= 0 && len < size; a++)
        len += (size_t)snprintf(buf + len, size - len, "%s, ", algo_names[*a]);
    if (len < size)
        snprintf(buf + len, size - len, "auto");
}

int coll_parse_algo(enum coll_op op, const char *name, int *algo, ps_err *err)
{
    if ((unsigned)op >= COLL_NOPS)
        return ps_errf(err, "unknown collective op %d", (int)op);
    if (name && strcmp(name, "auto") == 0) {
        *algo = COLL_AUTO;
        return PS_OK;
    }
    for (const int *a = op_algos[op]; *a >= 0; a++)
        if (name && strcmp(name, algo_names[*a]) == 0) {
            *algo = *a;
            return PS_OK;
        }
    char list[256];
    list_algos(op, list, sizeof list);
    return ps_errf(err, "unknown %s algorithm '%s' (expected %s)", op_names[op],
                   name ? name : "", list);
}

/* ------------------------------------------------------------------ */
/* Input checks                                                        */

/* A checked view of the spec: positions, root position, element count. */
typedef struct view {
    const int32_t *rank; /* position -> cluster rank */
    int32_t *owned;      /* identity list when spec->ranks is NULL */
    int32_t N;
    int32_t root; /* position */
    int64_t n;    /* elements */
} view;

static int check_spec(const coll_spec *spec, const net *nw, view *v,
                      ps_err *err)
{
    memset(v, 0, sizeof *v);
    int32_t C = net_ranks(nw);
    if ((unsigned)spec->op >= COLL_NOPS)
        return ps_errf(err, "unknown collective op %d", (int)spec->op);
    const char *opn = op_names[spec->op];
    if (spec->algorithm != COLL_AUTO &&
        !coll_algo_applies(spec->op, spec->algorithm)) {
        char list[256];
        list_algos(spec->op, list, sizeof list);
        return ps_errf(err, "%s has no algorithm '%s' (expected %s)", opn,
                       coll_algo_name(spec->algorithm), list);
    }
    if (spec->bytes < 0)
        return ps_errf(err, "%s: bytes must be zero or positive, got %lld", opn,
                       (long long)spec->bytes);
    if (spec->bytes % 4)
        return ps_errf(err,
                       "%s: bytes must be a multiple of 4 (float32 "
                       "elements), got %lld",
                       opn, (long long)spec->bytes);
    if (spec->ranks) {
        if (spec->nranks < 1)
            return ps_errf(err, "%s: no ranks", opn);
        v->rank = spec->ranks;
        v->N = spec->nranks;
    } else {
        v->owned = malloc(((size_t)C + 1) * sizeof *v->owned);
        if (!v->owned)
            return ps_errf(err, "out of memory");
        for (int32_t i = 0; i < C; i++)
            v->owned[i] = i;
        v->rank = v->owned;
        v->N = C;
    }
    char *seen = calloc((size_t)C + 1, 1);
    if (!seen)
        return ps_errf(err, "out of memory");
    int rc = PS_OK;
    v->root = -1;
    for (int32_t i = 0; i < v->N && rc == PS_OK; i++) {
        int32_t r = v->rank[i];
        if (r < 0 || r >= C)
            rc = ps_errf(err, "%s: rank %d is not in the cluster (ranks 0..%d)",
                         opn, (int)r, (int)C - 1);
        else if (seen[r]++)
            rc = ps_errf(err, "%s: rank %d is listed twice", opn, (int)r);
        else if (r == spec->root)
            v->root = i;
    }
    free(seen);
    if (rc)
        return rc;
    int rooted = spec->op == COLL_BROADCAST || spec->op == COLL_REDUCE;
    if (rooted && v->root < 0)
        return ps_errf(err, "%s: root %d is not among the ranks", opn,
                       (int)spec->root);
    if (!rooted)
        v->root = 0;
    if (spec->ranks_per_node < 0)
        return ps_errf(err, "%s: ranks_per_node must be positive, got %d", opn,
                       (int)spec->ranks_per_node);
    if (spec->chunks < 0)
        return ps_errf(err, "%s: chunks must be positive, got %d", opn,
                       (int)spec->chunks);
    v->n = spec->bytes / 4;
    return PS_OK;
}

static void view_free(view *v)
{
    free(v->owned);
    v->owned = NULL;
}

/* ------------------------------------------------------------------ */
/* Cost models                                                         */

/* Worst latency and bottleneck bandwidth over a set of pairs. */
typedef struct ab {
    double a, b;
} ab;

static void ab_add(ab *x, const net *nw, int32_t s, int32_t d)
{
    if (s == d)
        return;
    double lat, bw;
    net_path(nw, s, d, &lat, &bw);
    if (lat > x->a)
        x->a = lat;
    if (bw < x->b)
        x->b = bw;
}

/* Ring neighbours both ways and the pairs with the first (or root)
 * position: the pairs every algorithm here uses or is bounded by. O(N). */
static ab pairs_all(const net *nw, const view *v)
{
    ab x = {0, INFINITY};
    for (int32_t i = 0; i < v->N; i++) {
        ab_add(&x, nw, v->rank[i], v->rank[(i + 1) % v->N]);
        ab_add(&x, nw, v->rank[(i + 1) % v->N], v->rank[i]);
        ab_add(&x, nw, v->rank[v->root], v->rank[i]);
        ab_add(&x, nw, v->rank[i], v->rank[v->root]);
    }
    return x;
}

/* How many of one rank's direct flows (to all, or from all) share a link at
 * most: 1 on a mesh, N-1 when a rank has a single port. O(N log N). */
static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int direct_contention(const net *nw, const view *v, double *c)
{
    *c = 1;
    if (net_is_mesh(nw)) /* a link per pair; mesh links share one id */
        return 0;
    size_t cap = 64, used = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids)
        return -1;
    for (int dir = 0; dir < 2; dir++) {
        used = 0;
        for (int32_t i = 1; i < v->N; i++) {
            const int32_t *links;
            int32_t one,
                len = dir ? net_route(nw, v->rank[i], v->rank[0], &links, &one)
                          : net_route(nw, v->rank[0], v->rank[i], &links, &one);
            if (used + (size_t)len > cap) {
                while (used + (size_t)len > cap)
                    cap *= 2;
                int32_t *p = realloc(ids, cap * sizeof *ids);
                if (!p) {
                    free(ids);
                    return -1;
                }
                ids = p;
            }
            memcpy(ids + used, links, (size_t)len * sizeof *ids);
            used += (size_t)len;
        }
        qsort(ids, used, sizeof *ids, cmp_i32);
        for (size_t i = 0, j; i < used; i = j) {
            for (j = i; j < used && ids[j] == ids[i]; j++)
                ;
            if ((double)(j - i) > *c)
                *c = (double)(j - i);
        }
    }
    free(ids);
    return 0;
}

static int32_t ceil_log2(int32_t n)
{
    int32_t k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* steps(k) * (a + T / (k b)) with steps = k + fixed: the best k in
 * [1, kmax] (the real optimum sqrt(fixed T / (a b)), rounded both ways). */
static double chunked(double fixed, double a, double b, double T, int64_t kmax,
                      int32_t *best)
{
    if (kmax < 1)
        kmax = 1;
    if (kmax > COLL_MAX_CHUNKS)
        kmax = COLL_MAX_CHUNKS;
    double k0 = a > 0 ? sqrt(fixed * T / (a * b)) : (double)kmax;
    int64_t ks[2] = {(int64_t)floor(k0), (int64_t)ceil(k0)};
    double tbest = INFINITY;
    for (int i = 0; i < 2; i++) {
        int64_t k = ks[i] < 1 ? 1 : ks[i] > kmax ? kmax : ks[i];
        double t = (k + fixed) * (a + T / ((double)k * b));
        if (t < tbest) {
            tbest = t;
            *best = (int32_t)k;
        }
    }
    return tbest;
}

/* ------------------------------------------------------------------ */
/* Topology-aware costs (any network but a mesh)                       */

/* Rings on whole nodes run as several channels (coll_algo.c,
 * ring_channels): one per NIC of the node on a cluster built by
 * net_build_cluster, ranks_per_node elsewhere; one ring when the ranks are
 * not whole nodes (ranks_per_node < 2, fewer than two nodes) or on a mesh,
 * where every pair has its own link and there are no NICs to spread over
 * (more rings would only stack flows on the same intra-node pair links). */
static int32_t ring_channels(const coll_spec *spec, const net *nw,
                             const view *v)
{
    int32_t g = spec->ranks_per_node;
    if (g < 2 || v->N % g || v->N / g < 2 || net_is_mesh(nw))
        return 1;
    int32_t nics = net_nics_per_node(nw, g);
    return nics > 0 ? nics : g;
}

/* Alpha-beta of flows that run at once (one step of an algorithm): flow f
 * from cluster rank src[f] to dst[f] gets lat[f], its route's latency, and
 * bw[f], the smallest bandwidth / k over its route's links, k being how
 * many of the flows cross that link. Under max-min fair sharing a flow
 * never gets less than that share (progressive filling raises all flows
 * together until a link is full) and gets exactly that when the flows are
 * alike, as in a ring step. FIFO runs the k flows one after the other,
 * each holding its route, so lat[f] is multiplied by the largest k on the
 * route too. A flow with src == dst gets 0 and INFINITY. O(H log H) for H
 * hops in all. Returns 0, or -1 when out of memory. */
static int flows_ab(const net *nw, const int32_t *src, const int32_t *dst,
                    int64_t nf, double *lat, double *bw)
{
    const int32_t *links;
    int32_t one;
    int64_t total = 0;
    for (int64_t f = 0; f < nf; f++)
        total += net_route(nw, src[f], dst[f], &links, &one);
    int32_t *ids = malloc(((size_t)total + 1) * sizeof *ids);
    if (!ids)
        return -1;
    int64_t used = 0;
    for (int64_t f = 0; f < nf; f++) {
        int32_t len = net_route(nw, src[f], dst[f], &links, &one);
        memcpy(ids + used, links, (size_t)len * sizeof *ids);
        used += len;
    }
    qsort(ids, (size_t)total, sizeof *ids, cmp_i32);
    int fifo = net_sharing_of(nw) == NET_FIFO;
    for (int64_t f = 0; f < nf; f++) {
        int32_t len = net_route(nw, src[f], dst[f], &links, &one);
        double l = 0, b = INFINITY, kmax = 1;
        for (int32_t i = 0; i < len; i++) {
            /* flows on links[i]: its run in the sorted ids */
            int64_t lo = 0, hi = total;
            while (lo < hi) {
                int64_t mid = (lo + hi) / 2;
                if (ids[mid] < links[i])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            int64_t first = lo;
            hi = total;
            while (lo < hi) {
                int64_t mid = (lo + hi) / 2;
                if (ids[mid] <= links[i])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            double k = (double)(lo - first), lb, ll;
            net_link_figures(nw, links[i], &lb, &ll);
            l += ll;
            if (lb / k < b)
                b = lb / k;
            if (k > kmax)
                kmax = k;
        }
        lat[f] = fifo ? l * kmax : l;
        bw[f] = b;
    }
    free(ids);
    return 0;
}

/* The slowest of nf flows of `bytes` each that run at once (flows_ab).
 * Returns 0, or -1 when out of memory. */
static int step_time(const net *nw, const int32_t *src, const int32_t *dst,
                     int64_t nf, double bytes, double *t)
{
    double *lat = malloc(((size_t)nf + 1) * sizeof *lat);
    double *bw = malloc(((size_t)nf + 1) * sizeof *bw);
    int rc = lat && bw ? flows_ab(nw, src, dst, nf, lat, bw) : -1;
    *t = 0;
    for (int64_t f = 0; f < nf && rc == 0; f++)
        if (lat[f] + bytes / bw[f] > *t)
            *t = lat[f] + bytes / bw[f];
    free(lat);
    free(bw);
    return rc;
}

/* One step of the ring (C channels, coll_algo.c ring_channels), every flow
 * carrying a block of T / (C N) bytes. All steps of a ring are alike, so
 * the ring takes steps x this. On a cluster with one NIC per channel and
 * FAIR sharing this is exact for even blocks: a GPU sends C - 1 blocks to
 * its node neighbour over its NVLink uplink (the channel it leaves the node
 * in goes through its NIC instead) and each NIC carries one channel per
 * direction, so a step takes
 *   max(a_in + (C - 1) T / (C N b_in), a_out + T / (C N b_out)),
 * against a_out + T / (N b_out) for one ring: the inter-node term shrinks
 * C-fold until NVLink, which carries (C - 1) / C of the data, is the
 * bottleneck (busbw -> min(b_in C / (C - 1), C b_out) as T grows). */
static int ring_step(const net *nw, const view *v, int32_t rpn, int32_t C,
                     double T, double *t)
{
    int32_t N = v->N;
    int64_t nf = (int64_t)C * N;
    int32_t *src = malloc(((size_t)nf + 1) * sizeof *src);
    int32_t *dst = malloc(((size_t)nf + 1) * sizeof *dst);
    int rc = -1;
    if (src && dst) {
        for (int32_t c = 0; c < C; c++) {
            int32_t st = C > 1 ? coll_ring_start(rpn, C, c) : 0;
            for (int32_t k = 0; k < N; k++) {
                int32_t k1 = (k + 1) % N;
                int32_t a = C > 1 ? k - k % rpn + (k % rpn + st) % rpn : k;
                int32_t b = C > 1 ? k1 - k1 % rpn + (k1 % rpn + st) % rpn : k1;
                src[(int64_t)c * N + k] = v->rank[a];
                dst[(int64_t)c * N + k] = v->rank[b];
            }
        }
        rc = step_time(nw, src, dst, nf, T / ((double)C * N), t);
    }
    free(src);
    free(dst);
    return rc;
}

/* Binomial tree, step by step from the pairs each step uses: steps inside
 * a node pay the intra-node route, steps across nodes the inter-node one.
 * reduce (up = 1): relative v sends to v - mask in the step of mask;
 * broadcast the same pairs the other way, masks descending (same sum).
 * O(N log N) route lookups. */
static int tree_steps(const net *nw, const view *v, int32_t root, int up,
                      double T, double *t)
{
    int32_t N = v->N;
    int32_t *src = malloc(((size_t)N + 1) * sizeof *src);
    int32_t *dst = malloc(((size_t)N + 1) * sizeof *dst);
    int rc = src && dst ? 0 : -1;
    *t = 0;
    for (int32_t mask = 1; mask < N && rc == 0; mask *= 2) {
        int64_t nf = 0;
        for (int32_t x = mask; x < N; x += 2 * mask) {
            int32_t a = v->rank[(x + root) % N];
            int32_t b = v->rank[(x - mask + root) % N];
            src[nf] = up ? a : b;
            dst[nf++] = up ? b : a;
        }
        double st;
        rc = step_time(nw, src, dst, nf, T, &st);
        *t += st;
    }
    free(src);
    free(dst);
    return rc;
}

/* The upper envelope of the lines lat[i] + x / bw[i] (x >= 0): the pairs
 * no other pair beats in both latency and bandwidth, appended to *pool
 * (grown as needed). Returns how many, or -1 when out of memory. */
typedef struct lbw {
    double lat, bw;
} lbw;

static int cmp_lbw(const void *a, const void *b)
{
    const lbw *x = a, *y = b;
    if (x->lat != y->lat)
        return x->lat < y->lat ? 1 : -1; /* latency descending */
    return (x->bw > y->bw) - (x->bw < y->bw);
}

static int64_t envelope(const double *lat, const double *bw, int64_t n,
                        lbw **pool, int64_t *used, int64_t *cap)
{
    lbw *tmp = malloc(((size_t)n + 1) * sizeof *tmp);
    if (!tmp)
        return -1;
    for (int64_t i = 0; i < n; i++)
        tmp[i] = (lbw){lat[i], bw[i]};
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_lbw);
    int64_t kept = 0;
    double lowest = INFINITY;
    for (int64_t i = 0; i < n; i++) {
        if (!(tmp[i].bw < lowest))
            continue; /* slower latency-wise and not narrower */
        lowest = tmp[i].bw;
        if (*used == *cap) {
            int64_t c = *cap ? 2 * *cap : 64;
            lbw *p = realloc(*pool, (size_t)c * sizeof *p);
            if (!p) {
                free(tmp);
                return -1;
            }
            *pool = p;
            *cap = c;
        }
        (*pool)[(*used)++] = tmp[i];
        kept++;
    }
    free(tmp);
    return kept;
}

/* double_binary_tree off a mesh. Flow e (an edge of either tree, up or
 * down) runs in k consecutive steps from an offset o(e): h(v) on the way
 * up, H + d(v) - 1 on the way down, as the generator schedules it, each
 * time carrying a chunk of x = T / 2k. Step s therefore runs the flows of
 * offsets [s - k + 1, s] (clipped to 0 .. 2H - 1), a contiguous range;
 * for every range the flows are costed together (flows_ab: route latency,
 * the share of each link among the range's flows) and the step costs the
 * slowest of them. Steps inside a node are cheap, so fill and drain near
 * the leaves cost less than the steady state, where all flows of both
 * trees run at once. The sum over the k + 2H - 1 steps is minimised over
 * k <= kmax (or taken at spec's k). O(N H^2 log N + kmax H^2) for the
 * O(H^2) ranges. */
static int dbt_cost(const net *nw, const view *v, double T, int32_t fixed_k,
                    double *t, int32_t *best)
{
    int32_t N = v->N, H = 0;
    int64_t ne = 4 * (int64_t)N;
    int32_t *par = malloc((size_t)ne * sizeof *par);
    int32_t *dep = par ? par + 2 * N : NULL;
    int32_t *hei = malloc((size_t)N * 2 * sizeof *hei);
    int32_t *src = malloc((size_t)ne * sizeof *src);
    int32_t *dst = malloc((size_t)ne * sizeof *dst);
    double *lat = malloc((size_t)ne * sizeof *lat);
    double *bw = malloc((size_t)ne * sizeof *bw);
    int64_t *first = NULL, *rfirst = NULL;
    lbw *pool = NULL;
    int64_t used = 0, cap = 0;
    int rc = -1;
    if (!par || !hei || !src || !dst || !lat || !bw)
        goto done;
    coll_dtree(N, par, dep, hei, &H);
    int32_t W = 2 * H; /* offsets 0 .. 2H - 1 */
    first = calloc((size_t)W + 2, sizeof *first);
    rfirst = malloc(((size_t)W * W + 1) * sizeof *rfirst);
    if (!first || !rfirst)
        goto done;
    /* the flows grouped by offset (counting sort): a range of offsets is a
     * run of flows, first[lo] .. first[hi + 1] */
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t tr = 0; tr < 2; tr++)
            for (int32_t x = 0; x < N; x++) {
                int32_t p = par[tr * N + x];
                if (p < 0)
                    continue;
                int32_t ou = hei[tr * N + x], od = H + dep[tr * N + x] - 1;
                if (pass == 0) {
                    first[ou + 2]++;
                    first[od + 2]++;
                    continue;
                }
                int64_t i = first[ou + 1]++;
                src[i] = v->rank[x];
                dst[i] = v->rank[p];
                i = first[od + 1]++;
                src[i] = v->rank[p];
                dst[i] = v->rank[x];
            }
        if (pass == 0)
            for (int32_t o = 0; o < W; o++)
                first[o + 2] += first[o + 1];
    }
    /* every range lo..hi: the envelope of its flows, pool[rfirst[r] ..
     * rfirst[r] + count), r = lo W + hi; the count is stored in the next
     * slot's start, so ranges are filled in index order */
    for (int32_t lo = 0; lo < W; lo++)
        for (int32_t hi = 0; hi < W; hi++) {
            rfirst[lo * W + hi] = used;
            if (hi < lo)
                continue;
            int64_t a = first[lo], n = first[hi + 1] - a;
            if (flows_ab(nw, src + a, dst + a, n, lat, bw) ||
                envelope(lat, bw, n, &pool, &used, &cap) < 0)
                goto done;
        }
    rfirst[W * W] = used;
    int64_t kmax = v->n / 2 < COLL_MAX_CHUNKS ? v->n / 2 : COLL_MAX_CHUNKS;
    if (kmax < 1)
        kmax = 1;
    int64_t k0 = fixed_k ? fixed_k : 1, k1 = fixed_k ? fixed_k : kmax;
    *t = INFINITY;
    for (int64_t k = k0; k <= k1; k++) {
        double x = T / (2.0 * (double)k), sum = 0;
        for (int64_t s = 0; s < k + W - 1; s++) {
            int64_t lo = s - k + 1 > 0 ? s - k + 1 : 0;
            int64_t hi = s < W - 1 ? s : W - 1, r = lo * W + hi, reps = 1;
            if (lo == 0 && hi == W - 1) { /* all offsets up to s = k - 1 */
                reps = k - s;
                s = k - 1;
            }
            double m = 0;
            for (int64_t i = rfirst[r]; i < rfirst[r + 1]; i++)
                if (pool[i].lat + x / pool[i].bw > m)
                    m = pool[i].lat + x / pool[i].bw;
            sum += (double)reps * m;
        }
        if (sum < *t) {
            *t = sum;
            *best = (int32_t)k;
        }
    }
    rc = 0;
done:
    free(par);
    free(hei);
    free(src);
    free(dst);
    free(lat);
    free(bw);
    free(first);
    free(rfirst);
    free(pool);
    return rc;
}

static int predict(const coll_spec *spec, const net *nw, const view *v,
                   int algo, double *seconds, int32_t *chunks, ps_err *err)
{
    enum coll_op op = spec->op;
    int32_t N = v->N;
    double T = (double)spec->bytes;
    *chunks = 1;
    if (!coll_algo_applies(op, algo))
        return ps_errf(err, "%s has no algorithm '%s'", op_names[op],
                       coll_algo_name(algo));
    int32_t rpn = spec->ranks_per_node;
    if (algo == COLL_HIERARCHICAL && (rpn < 1 || N % rpn))
        return ps_errf(err,
                       rpn < 1 ? "hierarchical allreduce needs ranks_per_node"
                               : "hierarchical allreduce: %d ranks do not "
                                 "split into nodes of %d",
                       (int)N, (int)rpn);
    if (N < 2 || T == 0) {
        *seconds = 0;
        if (spec->chunks)
            *chunks = spec->chunks;
        return PS_OK;
    }
    ab x = pairs_all(nw, v);
    double a = x.a, b = x.b, Nd = N, lg = ceil_log2(N);
    /* off a mesh, ring and trees are costed from the flows they run */
    int topo = !net_is_mesh(nw);
    int oom = 0;
    int32_t p2 = 1;
    while (p2 * 2 <= N)
        p2 *= 2;
    double lp2 = ceil_log2(p2), fold = p2 < N;
    double c = 1;
    double t = 0;
    switch (algo) {
    case COLL_RING:
        if (topo)
            oom = ring_step(nw, v, rpn, ring_channels(spec, nw, v), T, &t);
        else
            t = a + T / (Nd * b);
        t *= (N - 1) * (op == COLL_ALLREDUCE ? 2 : 1);
        break;
    case COLL_TREE:
        if (topo) {
            double up = 0, down = 0;
            int32_t r = op == COLL_ALLREDUCE ? 0 : v->root;
            if (op != COLL_BROADCAST)
                oom |= tree_steps(nw, v, r, 1, T, &up);
            if (op != COLL_REDUCE)
                oom |= tree_steps(nw, v, r, 0, T, &down);
            t = up + down;
        } else {
            t = lg * (a + T / b) * (op == COLL_ALLREDUCE ? 2 : 1);
        }
        break;
    case COLL_DOUBLE_BINARY_TREE: {
        /* chunks + 2D - 1 steps of a chunk of half the array */
        double fixed = 2.0 * coll_btree_depth(N) - 1;
        if (topo) {
            oom = dbt_cost(nw, v, T, spec->chunks, &t, chunks);
        } else if (spec->chunks) {
            *chunks = spec->chunks;
            t = (*chunks + fixed) * (a + T / (2.0 * *chunks * b));
        } else {
            t = chunked(fixed, a, 2 * b, T, v->n / 2, chunks);
        }
        break;
    }
    case COLL_HALVING_DOUBLING:
        t = lp2 * a + (p2 - 1) / (double)p2 * T / b;
        if (op == COLL_ALLREDUCE)
            t = 2 * t + fold * 2 * (a + T / b);
        else
            t += fold * (2 * a + T / b + T / (Nd * b));
        break;
    case COLL_DIRECT:
        if (direct_contention(nw, v, &c))
            return ps_errf(err, "out of memory");
        t = (a + c * T / (Nd * b)) * (op == COLL_ALLREDUCE ? 2 : 1);
        break;
    case COLL_HIERARCHICAL: {
        int32_t m = N / rpn;
        ab in = {0, INFINITY}, out = {0, INFINITY};
        for (int32_t i = 0; i < N; i++) {
            int32_t node = i / rpn, l = i % rpn;
            ab_add(&in, nw, v->rank[i], v->rank[node * rpn + (l + 1) % rpn]);
            ab_add(&out, nw, v->rank[i], v->rank[((node + 1) % m) * rpn + l]);
        }
        if (rpn > 1)
            t += 2 * (rpn - 1) * (in.a + T / (rpn * in.b));
        if (m > 1)
            t += 2 * (m - 1) * (out.a + T / ((double)rpn * m * out.b));
        break;
    }
    case COLL_PIPELINE:
        if (spec->chunks) {
            *chunks = spec->chunks;
            t = (*chunks + N - 2) * (a + T / (*chunks * b));
        } else {
            t = chunked(N - 2, a, b, T, v->n, chunks);
        }
        break;
    case COLL_SCATTER_ALLGATHER:
        t = lg * a + (N - 1) * T / (Nd * b) + (N - 1) * (a + T / (Nd * b));
        break;
    }
    if (oom)
        return ps_errf(err, "out of memory");
    *seconds = t;
    return PS_OK;
}

int coll_predict(const coll_spec *spec, const net *nw, int algo,
                 double *seconds, int32_t *chunks, ps_err *err)
{
    view v;
    int rc = check_spec(spec, nw, &v, err);
    if (rc == PS_OK)
        rc = predict(spec, nw, &v, algo, seconds, chunks, err);
    view_free(&v);
    return rc;
}

/* auto: the candidate with the lowest predicted time (ties: list order). */
static int choose(const coll_spec *spec, const net *nw, const view *v,
                  int *algo, double *pred, int32_t *chunks, ps_err *err)
{
    *algo = -1;
    *pred = INFINITY;
    for (const int *a = op_algos[spec->op]; *a >= 0; a++) {
        if (spec->candidates && !(spec->candidates & (1u << *a)))
            continue;
        double t;
        int32_t k;
        if (predict(spec, nw, v, *a, &t, &k, NULL))
            continue; /* does not apply here (hierarchical without nodes) */
        if (t < *pred) {
            *pred = t;
            *algo = *a;
            *chunks = k;
        }
    }
    if (*algo < 0)
        return ps_errf(err, "%s: no candidate algorithm applies",
                       op_names[spec->op]);
    return PS_OK;
}

/* ------------------------------------------------------------------ */
/* Data mode                                                           */

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float input(const coll_spec *spec, int32_t rank, int64_t i)
{
    if (spec->data == COLL_DATA_FN)
        return (float)spec->data_fn(spec->data_ctx, rank, i);
    uint64_t z = mix(spec->seed ^
                     mix((uint64_t)rank * 0x100000001b3ull ^ mix((uint64_t)i)));
    return (float)((double)(z >> 11) * 0x1p-53 * 2 - 1);
}

/* Applies the recorded transfers step by step: every payload of a step is
 * read before any of the step's receives lands, as a rank's batch sends
 * what it held when it was posted. O(transfers + elements moved). */
static int replay(coll_gen *g, float *buf, int64_t n)
{
    int32_t S = g->nsteps;
    int64_t *start = calloc((size_t)S + 1, sizeof *start);
    int64_t *order = malloc(((size_t)g->nx + 1) * sizeof *order);
    int64_t maxstep = 0;
    if (!start || !order) {
        free(start);
        free(order);
        return -1;
    }
    for (int64_t i = 0; i < g->nx; i++)
        start[g->x[i].step + 1]++;
    for (int32_t s = 0; s < S; s++)
        start[s + 1] += start[s];
    int64_t *fill = malloc(((size_t)S + 1) * sizeof *fill);
    if (!fill) {
        free(start);
        free(order);
        return -1;
    }
    memcpy(fill, start, ((size_t)S + 1) * sizeof *fill);
    for (int64_t i = 0; i < g->nx; i++)
        order[fill[g->x[i].step]++] = i;
    free(fill);
    for (int32_t s = 0; s < S; s++) {
        int64_t m = 0;
        for (int64_t k = start[s]; k < start[s + 1]; k++)
            m += g->x[order[k]].cnt;
        if (m > maxstep)
            maxstep = m;
    }
    float *pay = malloc(((size_t)maxstep + 1) * sizeof *pay);
    if (!pay) {
        free(start);
        free(order);
        return -1;
    }
    for (int32_t s = 0; s < S; s++) {
        float *p = pay;
        for (int64_t k = start[s]; k < start[s + 1]; k++) {
            const coll_xfer *x = &g->x[order[k]];
            memcpy(p, buf + (size_t)x->src * (size_t)n + (size_t)x->lo,
                   (size_t)x->cnt * sizeof *p);
            p += x->cnt;
        }
        p = pay;
        for (int64_t k = start[s]; k < start[s + 1]; k++) {
            const coll_xfer *x = &g->x[order[k]];
            float *d = buf + (size_t)x->dst * (size_t)n + (size_t)x->lo;
            if (x->add)
                for (int64_t e = 0; e < x->cnt; e++)
                    d[e] += p[e];
            else
                memcpy(d, p, (size_t)x->cnt * sizeof *d);
            p += x->cnt;
        }
    }
    free(pay);
    free(start);
    free(order);
    return 0;
}

/* Fills the inputs into buf (N x n), runs the replay, checks the result and
 * sets up res's outputs (which then own buf). */
static int data_run(const coll_spec *spec, const view *v, coll_gen *g,
                    float *buf, coll_result *res, ps_err *err)
{
    int32_t N = v->N;
    int64_t n = v->n;
    enum coll_op op = spec->op;
    double *ref = malloc(((size_t)n + 1) * sizeof *ref);
    double *mag = malloc(((size_t)n + 1) * sizeof *mag);
    if (!ref || !mag) {
        free(ref);
        free(mag);
        return ps_errf(err, "out of memory for the reference result");
    }
    for (int32_t i = 0; i < N; i++) {
        float *b = buf + (size_t)i * (size_t)n;
        int32_t r = v->rank[i];
        int64_t lo = 0, hi = n;
        if (op == COLL_ALLGATHER) {
            lo = coll_seg_lo(n, N, i);
            hi = lo + coll_seg_cnt(n, N, i);
        }
        int holds = op != COLL_BROADCAST || i == v->root;
        for (int64_t e = 0; e < n; e++)
            b[e] = holds && e >= lo && e < hi ? input(spec, r, e) : NAN;
    }
    int reduces =
        op == COLL_ALLREDUCE || op == COLL_REDUCE_SCATTER || op == COLL_REDUCE;
    for (int64_t e = 0; e < n; e++) {
        double s = 0, m = 0;
        if (reduces) {
            for (int32_t i = 0; i < N; i++) {
                double x = buf[(size_t)i * (size_t)n + (size_t)e];
                s += x;
                m += fabs(x);
            }
        } else {
            int32_t owner = v->root;
            if (op == COLL_ALLGATHER) /* the shard holding e */
                for (owner = 0;
                     owner + 1 < N && coll_seg_lo(n, N, owner + 1) <= e;
                     owner++)
                    ;
            s = buf[(size_t)owner * (size_t)n + (size_t)e];
        }
        ref[e] = s;
        mag[e] = m;
    }
    int rc = PS_OK;
    if (replay(g, buf, n))
        rc = ps_errf(err, "out of memory replaying the data");
    for (int32_t i = 0; i < N && rc == PS_OK; i++) {
        int64_t lo = 0, cnt = n;
        if (op == COLL_REDUCE_SCATTER) {
            lo = coll_seg_lo(n, N, i);
            cnt = coll_seg_cnt(n, N, i);
        } else if (op == COLL_REDUCE && i != v->root) {
            cnt = 0;
        }
        const float *b = buf + (size_t)i * (size_t)n;
        for (int64_t e = lo; e < lo + cnt; e++) {
            double tol = reduces ? N * (double)FLT_EPSILON * mag[e] : 0;
            if (!(fabs((double)b[e] - ref[e]) <= tol)) {
                rc = ps_errf(err,
                             "rank %d element %lld: got %.9g, expected "
                             "%.9g",
                             (int)v->rank[i], (long long)e, (double)b[e],
                             ref[e]);
                break;
            }
        }
        res->outputs[i] = buf + (size_t)i * (size_t)n + lo;
        res->out_count[i] = cnt;
    }
    free(ref);
    free(mag);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The run                                                             */

/* Counting pass: runs the generator without emitting to learn each
 * position's op and send counts, reserves every lane exactly (no realloc
 * while generating) and hands each sender a contiguous block of message
 * ids. O(transfers) with no memory traffic beyond two counters each. */
static int reserve(coll_gen *g, enum coll_op op, int algo, int32_t root,
                   int32_t rpn, int32_t chunks)
{
    int32_t N = g->N;
    g->ops = calloc((size_t)N, sizeof *g->ops);
    g->next_msg = calloc((size_t)N, sizeof *g->next_msg);
    if (!g->ops || !g->next_msg)
        return -1;
    g->counting = 1;
    coll_generate(g, op, algo, root, rpn, chunks);
    g->counting = 0;
    g->nsteps = 0;
    if (g->oom)
        return -1;
    int64_t base = g->ps->nmsgs;
    for (int32_t i = 0; i < N; i++) {
        int64_t sends = g->next_msg[i];
        g->next_msg[i] = (int32_t)base;
        base += sends;
    }
    if (g->append) {
        /* lanes that already hold a training step's ops grow in place */
        for (int32_t i = 0; i < N; i++)
            if (prog_grow(g->ps, g->lane[i], g->ops[i]))
                return -1;
    } else {
        int64_t *count = calloc((size_t)g->ps->nlanes + 1, sizeof *count);
        if (!count)
            return -1;
        for (int32_t i = 0; i < N; i++)
            count[g->lane[i]] = g->ops[i];
        int rc = prog_reserve(g->ps, count);
        free(count);
        if (rc)
            return -1;
    }
    if (base > INT32_MAX)
        return -1;
    g->ps->nmsgs = (int32_t)base; /* the ids handed out above */
    return 0;
}

void coll_result_free(coll_result *res)
{
    if (!res)
        return;
    free(res->bytes_sent);
    free(res->outputs);
    free(res->out_count);
    free(res->store_);
    res->bytes_sent = NULL;
    res->outputs = NULL;
    res->out_count = NULL;
    res->store_ = NULL;
}

/* The algorithm to run (spec's, or auto's choice), its prediction and its
 * chunk count. */
static int pick(const coll_spec *spec, const net *nw, const view *v, int *algo,
                double *pred, int32_t *chunks, ps_err *err)
{
    *algo = spec->algorithm;
    *chunks = 1;
    *pred = 0;
    if (*algo == COLL_AUTO)
        return choose(spec, nw, v, algo, pred, chunks, err);
    return predict(spec, nw, v, *algo, pred, chunks, err);
}

/* Emits algo into g's lanes (set up by the caller): the channel count, the
 * counting pass that reserves room, then the ops. -1 when out of memory. */
static int emit(coll_gen *g, const coll_spec *spec, const net *nw,
                const view *v, int algo, int32_t chunks)
{
    g->channels = algo == COLL_RING ? ring_channels(spec, nw, v) : 1;
    if (!g->oom &&
        reserve(g, spec->op, algo, v->root, spec->ranks_per_node, chunks))
        g->oom = 1;
    if (!g->oom)
        coll_generate(g, spec->op, algo, v->root, spec->ranks_per_node, chunks);
    return g->oom ? -1 : 0;
}

static void gen_free(coll_gen *g)
{
    free(g->lane);
    free(g->last_step);
    free(g->x);
    free(g->ops);
    free(g->next_msg);
}

int coll_run(const coll_spec *spec, net *nw, eng_sim *eng, prog_set *ps,
             coll_result *res, ps_err *err)
{
    memset(res, 0, sizeof *res);
    view v;
    coll_gen g;
    memset(&g, 0, sizeof g);
    float *buf = NULL;
    int algo;
    int32_t chunks;
    double pred;
    int rc = check_spec(spec, nw, &v, err);
    if (rc || (rc = pick(spec, nw, &v, &algo, &pred, &chunks, err)))
        goto fail;
    int32_t N = v.N;
    if (spec->data != COLL_DATA_NONE) {
        if (spec->data == COLL_DATA_FN && !spec->data_fn) {
            rc = ps_errf(err, "%s: data mode without a data function",
                         op_names[spec->op]);
            goto fail;
        }
        if ((double)N * (double)v.n > 1e9) {
            rc = ps_errf(err,
                         "%s: data mode would hold %d x %lld floats; use a "
                         "smaller size",
                         op_names[spec->op], (int)N, (long long)v.n);
            goto fail;
        }
        buf = malloc(((size_t)N * (size_t)v.n + 1) * sizeof *buf);
        if (!buf) {
            rc = ps_errf(err, "out of memory for data mode");
            goto fail;
        }
    }
    res->bytes_sent = calloc((size_t)N, sizeof *res->bytes_sent);
    g.lane = malloc((size_t)N * sizeof *g.lane);
    g.last_step = malloc((size_t)N * sizeof *g.last_step);
    if (!res->bytes_sent || !g.lane || !g.last_step) {
        rc = ps_errf(err, "out of memory");
        goto fail;
    }
    prog_reset(ps, net_ranks(nw));
    g.ps = ps;
    g.rank = v.rank;
    g.N = N;
    g.n = v.n;
    g.sent = res->bytes_sent;
    g.record = buf != NULL;
    for (int32_t i = 0; i < N; i++) {
        g.lane[i] = prog_add_lane(ps, v.rank[i]);
        g.last_step[i] = -1;
        if (g.lane[i] < 0)
            g.oom = 1;
    }
    if (emit(&g, spec, nw, &v, algo, chunks)) {
        rc = ps_errf(err, "out of memory generating the programs");
        goto fail;
    }
    eng_result er;
    if ((rc = prog_seal(ps, err)))
        goto fail;
    eng_set_faults(eng, spec->faults);
    rc = eng_run(eng, ps, nw, spec->p2p, &er, err);
    eng_set_faults(eng, NULL);
    if (rc)
        goto fail;
    res->algorithm = algo;
    res->chunks = chunks;
    res->channels = g.channels;
    res->predicted = pred;
    res->time = er.makespan;
    res->nranks = N;
    res->transfers = g.transfers;
    res->steps = g.nsteps;
    res->algbw = er.makespan > 0 ? (double)spec->bytes / er.makespan : 0;
    res->busbw = res->algbw * coll_busbw_factor(spec->op, N);
    if (buf) {
        res->outputs = calloc((size_t)N, sizeof *res->outputs);
        res->out_count = calloc((size_t)N, sizeof *res->out_count);
        if (!res->outputs || !res->out_count) {
            rc = ps_errf(err, "out of memory");
            goto fail;
        }
        res->store_ = buf;
        buf = NULL;
        if ((rc = data_run(spec, &v, &g, res->store_, res, err)))
            goto fail;
    }
    gen_free(&g);
    view_free(&v);
    return PS_OK;
fail:
    free(buf);
    gen_free(&g);
    view_free(&v);
    coll_result_free(res);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Appending to existing programs (gradient sync inside a training step) */

int coll_append(prog_set *ps, const net *nw, const coll_spec *spec,
                const int32_t *lanes, int *used, ps_err *err)
{
    view v;
    coll_gen g;
    memset(&g, 0, sizeof g);
    int algo;
    int32_t chunks;
    double pred;
    int rc = check_spec(spec, nw, &v, err);
    if (rc)
        return rc;
    if ((rc = pick(spec, nw, &v, &algo, &pred, &chunks, err))) {
        view_free(&v);
        return rc;
    }
    int32_t N = v.N;
    g.ps = ps;
    g.append = 1;
    g.rank = v.rank;
    g.N = N;
    g.n = v.n;
    g.sent = calloc((size_t)N, sizeof *g.sent);
    g.lane = malloc((size_t)N * sizeof *g.lane);
    g.last_step = malloc((size_t)N * sizeof *g.last_step);
    if (!g.sent || !g.lane || !g.last_step)
        g.oom = 1;
    for (int32_t i = 0; i < N && !g.oom; i++) {
        g.lane[i] = lanes[i];
        g.last_step[i] = -1; /* never batched with the lane's earlier ops */
    }
    rc = emit(&g, spec, nw, &v, algo, chunks)
             ? ps_errf(err, "out of memory generating a collective")
             : PS_OK;
    if (used)
        *used = algo;
    free(g.sent);
    gen_free(&g);
    view_free(&v);
    return rc;
}
