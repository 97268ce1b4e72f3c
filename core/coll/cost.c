/* Collective cost models: alpha-beta closed forms on a mesh, and off a mesh
 * step-by-step costs from the flows each step runs (route latency, share of
 * each link), at a given number of bytes on the wire. The protocols' wire
 * bytes and `auto`'s choice on top of them are coll/choose.c. Pure
 * functions of the spec and the network: nothing here runs the engine. */
#include "coll/coll.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "coll/algo.h"
#include "coll/impl.h"

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
static ab pairs_all(const net *nw, const coll_view *v)
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

static int direct_contention(const net *nw, const coll_view *v, double *c)
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
            net_route_buf one;
            int32_t len =
                dir ? net_route(nw, v->rank[i], v->rank[0], &links, &one)
                    : net_route(nw, v->rank[0], v->rank[i], &links, &one);
            if (VEC_RESERVE(ids, cap, used + (size_t)len)) {
                free(ids);
                return -1;
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

/* The slowest of nf flows of `bytes` each that run at once (flows_ab).
 * Returns 0, or -1 when out of memory. */
static int step_time(const net *nw, const int32_t *src, const int32_t *dst,
                     int64_t nf, double bytes, double *t)
{
    double *lat = malloc(((size_t)nf + 1) * sizeof *lat);
    double *bw = malloc(((size_t)nf + 1) * sizeof *bw);
    int rc = lat && bw ? coll_flows_ab(nw, src, dst, nf, lat, bw) : -1;
    *t = 0;
    for (int64_t f = 0; f < nf && rc == 0; f++)
        if (lat[f] + bytes / bw[f] > *t)
            *t = lat[f] + bytes / bw[f];
    free(lat);
    free(bw);
    return rc;
}

/* The ring's `steps` steps (C channels, coll/algo.c ring_channels), every
 * flow carrying a block of T / (C N) bytes, all C N flows costed as running
 * at once (flows_ab). Lockstep (slots = 1): all steps are alike and each
 * waits for the slowest hop, so the ring takes steps x the slowest flow.
 * Pipelined (slots > 1, coll/coll.h "Slots"): a rank sends step s once it has
 * received step s - 1, so the last block to land has crossed `steps`
 * consecutive hops, each at its own latency, while the narrowest hop moves
 * a block every step: the ring takes the largest sum of `steps`
 * consecutive hop latencies plus steps x the slowest block time, O(C N). On a
 * cluster with one NIC per channel and FAIR sharing this is exact for even
 * blocks: a GPU sends C - 1 blocks to its node neighbour over its NVLink uplink
 * (the channel it leaves the node in goes through its NIC instead) and each NIC
 * carries one channel per direction, so a step takes max(a_in + (C - 1) T / (C
 * N b_in), a_out + T / (C N b_out)), against a_out + T / (N b_out) for one
 * ring: the inter-node term shrinks C-fold until NVLink, which carries (C - 1)
 * / C of the data, is the bottleneck (busbw -> min(b_in C / (C - 1), C b_out)
 * as T grows). */
/* The C N flows of a ring step (C channels, coll/algo.c ring_channels):
 * channel c's hop k at c N + k. */
static void ring_flows(const coll_view *v, int32_t rpn, int32_t C, int32_t *src,
                       int32_t *dst)
{
    int32_t N = v->N;
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
}

static int ring_step(const net *nw, const coll_view *v, int32_t rpn, int32_t C,
                     double T, int32_t steps, int32_t slots, double *t)
{
    int32_t N = v->N;
    int64_t nf = (int64_t)C * N;
    int32_t *src = calloc((size_t)nf + 1, sizeof *src);
    int32_t *dst = calloc((size_t)nf + 1, sizeof *dst);
    double *lat = malloc(((size_t)nf + 1) * sizeof *lat);
    double *bw = malloc(((size_t)nf + 1) * sizeof *bw);
    double *pre = malloc(((size_t)2 * N + 1) * sizeof *pre);
    int rc = -1;
    *t = 0;
    if (src && dst && lat && bw && pre) {
        ring_flows(v, rpn, C, src, dst);
        rc = coll_flows_ab(nw, src, dst, nf, lat, bw);
    }
    double x = T / ((double)C * N); /* a block */
    for (int32_t c = 0; c < C && rc == 0; c++) {
        const double *l = lat + (int64_t)c * N, *b = bw + (int64_t)c * N;
        if (slots <= 1) { /* lockstep: every step waits for the slowest */
            for (int32_t k = 0; k < N; k++)
                if ((l[k] + x / b[k]) * steps > *t)
                    *t = (l[k] + x / b[k]) * steps;
            continue;
        }
        /* pipelined: the last block to land at member j + 1 crossed the
         * `steps` hops before it, each paying its own latency (hops
         * j - steps + 1 .. j, cyclic, from prefix sums over the doubled
         * ring); the bandwidth terms do not add up along the path but
         * queue on the narrowest hop, which carries a block every step */
        double slow = 0;
        pre[0] = 0;
        for (int32_t k = 0; k < 2 * N; k++)
            pre[k + 1] = pre[k] + l[k % N];
        for (int32_t k = 0; k < N; k++)
            if (x / b[k] > slow)
                slow = x / b[k];
        int32_t q = steps / N, r = steps % N;
        for (int32_t j = 0; j < N; j++) {
            int32_t end = j + N + 1; /* hop j in the second copy, inclusive */
            double s = q * pre[N] + (pre[end] - pre[end - r]) + steps * slow;
            if (s > *t)
                *t = s;
        }
    }
    free(src);
    free(dst);
    free(lat);
    free(bw);
    free(pre);
    return rc;
}

/* Binomial tree, step by step from the pairs each step uses: steps inside
 * a node pay the intra-node route, steps across nodes the inter-node one.
 * reduce (up = 1): relative v sends to v - mask in the step of mask;
 * broadcast the same pairs the other way, masks descending (same sum).
 * O(N log N) route lookups. */
static int tree_steps(const net *nw, const coll_view *v, int32_t root, int up,
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
 * no other pair beats in both latency and bandwidth (ties kept once),
 * appended to *pool (grown as needed). A step's flows are a handful of
 * kinds (an NVLink hop, a NIC hop, shared or not), so the envelope is a
 * few entries and each flow is checked against it: O(n x kept), no sort.
 * Returns how many, or -1 when out of memory. */
typedef struct lbw {
    double lat, bw;
} lbw;

static int64_t envelope(const double *lat, const double *bw, int64_t n,
                        lbw **pool, int64_t *used, size_t *cap)
{
    int64_t base = *used, kept = 0;
    for (int64_t i = 0; i < n; i++) {
        lbw e = {lat[i], bw[i]};
        int dominated = 0;
        for (int64_t j = 0; j < kept && !dominated; j++) {
            const lbw *q = &(*pool)[base + j];
            dominated = q->lat >= e.lat && q->bw <= e.bw;
        }
        if (dominated)
            continue;
        /* drop what e dominates, then append it */
        int64_t w = 0;
        for (int64_t j = 0; j < kept; j++) {
            lbw q = (*pool)[base + j];
            if (!(e.lat >= q.lat && e.bw <= q.bw))
                (*pool)[base + w++] = q;
        }
        kept = w;
        if (VEC_RESERVE(*pool, *cap, (size_t)(base + kept) + 1))
            return -1;
        (*pool)[base + kept++] = e;
    }
    *used = base + kept;
    return kept;
}

/* The flows of both trees (C times, rotated within nodes) grouped by
 * their offset, by counting sort: the flows of offsets lo..hi are then one
 * run, src/dst[first[lo] .. first[hi + 1]). first has 2H + 2 zeroed
 * slots. */
static void group_flows(const coll_view *v, int32_t rpn, int32_t C, int32_t H,
                        const int32_t *par, const int32_t *dep,
                        const int32_t *hei, int64_t *first, int32_t *src,
                        int32_t *dst)
{
    int32_t N = v->N, W = 2 * H;
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t ch = 0; ch < C; ch++)
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
                    int32_t st = C > 1 ? coll_ring_start(rpn, C, ch) : 0;
                    int32_t rx = C > 1 ? coll_tree_rot(x, rpn, st) : x;
                    int32_t rp = C > 1 ? coll_tree_rot(p, rpn, st) : p;
                    int64_t i = first[ou + 1]++;
                    src[i] = v->rank[rx];
                    dst[i] = v->rank[rp];
                    i = first[od + 1]++;
                    src[i] = v->rank[rp];
                    dst[i] = v->rank[rx];
                }
        if (pass == 0)
            for (int32_t o = 0; o < W; o++)
                first[o + 2] += first[o + 1];
    }
}

/* Every range lo..hi of offsets: the envelope of its flows, (*pool)[rfirst[r]
 * .. rfirst[r + 1]), r = lo W + hi (rfirst has W W + 1 slots; a range with
 * hi < lo is empty), costed once so that each k's sum only scans them.
 * lat and bw are scratch for the most flows. Returns 0, or -1 when out of
 * memory (or a route is missing), *pool then freed by the caller. */
static int range_envelopes(const net *nw, int32_t W, const int64_t *first,
                           const int32_t *src, const int32_t *dst, double *lat,
                           double *bw, int64_t *rfirst, lbw **pool)
{
    int64_t used = 0;
    size_t cap = 0;
    for (int32_t lo = 0; lo < W; lo++)
        for (int32_t hi = 0; hi < W; hi++) {
            rfirst[lo * W + hi] = used;
            if (hi < lo)
                continue;
            int64_t a = first[lo], n = first[hi + 1] - a;
            if (coll_flows_ab(nw, src + a, dst + a, n, lat, bw) ||
                envelope(lat, bw, n, pool, &used, &cap) < 0)
                return -1;
        }
    rfirst[W * W] = used;
    return 0;
}

/* The time of k chunks per edge: step s runs the offsets [s - k + 1, s]
 * clipped to 0 .. W - 1 and costs its slowest flow; the steady state
 * (every offset at once) repeats, so it is costed once and counted. */
static double dbt_steps(double T, int64_t k, int32_t C, int32_t W,
                        const int64_t *rfirst, const lbw *pool)
{
    double x = T / (2.0 * (double)k * C), sum = 0;
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
    return sum;
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
 * k <= kmax (or taken at spec's k). With C channels (NCCL's tree on
 * whole nodes, coll/algo.c) every edge runs once per channel, rotated
 * within the nodes, carrying T / 2kC. O(C N H^2 + kmax H^2) for the
 * O(H^2) ranges. */
static int dbt_cost(const net *nw, const coll_view *v, int32_t rpn, int32_t C,
                    double T, int32_t fixed_k, double *t, int32_t *best)
{
    int32_t N = v->N, H = 0;
    if (C < 1 || rpn < 2 || N % rpn || N == rpn)
        C = 1;
    int64_t ne = 4 * (int64_t)N * C;
    int32_t *par = malloc((size_t)ne * sizeof *par);
    int32_t *dep = par ? par + 2 * N : NULL;
    int32_t *hei = malloc((size_t)N * 2 * sizeof *hei);
    int32_t *src = malloc((size_t)ne * sizeof *src);
    int32_t *dst = malloc((size_t)ne * sizeof *dst);
    double *lat = malloc((size_t)ne * sizeof *lat);
    double *bw = malloc((size_t)ne * sizeof *bw);
    int64_t *first = NULL, *rfirst = NULL;
    lbw *pool = NULL;
    int rc = -1;
    if (!par || !hei || !src || !dst || !lat || !bw)
        goto done;
    if (rpn)
        coll_tree_build(N, rpn, par, dep, hei, &H);
    else
        coll_dtree(N, par, dep, hei, &H);
    int32_t W = 2 * H; /* offsets 0 .. 2H - 1 */
    first = calloc((size_t)W + 2, sizeof *first);
    rfirst = malloc(((size_t)W * W + 1) * sizeof *rfirst);
    if (!first || !rfirst)
        goto done;
    group_flows(v, rpn, C, H, par, dep, hei, first, src, dst);
    if (range_envelopes(nw, W, first, src, dst, lat, bw, rfirst, &pool) < 0)
        goto done;
    int64_t kmax = v->n / (2 * C);
    if (kmax > COLL_MAX_CHUNKS)
        kmax = COLL_MAX_CHUNKS;
    if (kmax < 1)
        kmax = 1;
    int64_t k0 = fixed_k ? fixed_k : 1, k1 = fixed_k ? fixed_k : kmax;
    *t = INFINITY;
    for (int64_t k = k0; k <= k1; k++) {
        double sum = dbt_steps(T, k, C, W, rfirst, pool);
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

/* alltoall (direct: all N(N-1) flows of T/N at once; pairwise: N-1 steps
 * of N flows, i to i + k) and sendrecv (N flows of T, i to i + 1), each
 * step costed from its flows (flows_ab). O(N^2) route lookups for
 * alltoall. Returns 0, or -1 when out of memory. */
static int copies_cost(const net *nw, const coll_view *v, enum coll_op op,
                       int algo, double T, double *t)
{
    int32_t N = v->N;
    int64_t cap =
        op == COLL_ALLTOALL && algo == COLL_DIRECT ? (int64_t)N * (N - 1) : N;
    int32_t *src = calloc((size_t)cap + 1, sizeof *src);
    int32_t *dst = calloc((size_t)cap + 1, sizeof *dst);
    int rc = src && dst ? 0 : -1;
    *t = 0;
    if (rc == 0 && op == COLL_SENDRECV) {
        for (int32_t i = 0; i < N; i++) {
            src[i] = v->rank[i];
            dst[i] = v->rank[(i + 1) % N];
        }
        rc = step_time(nw, src, dst, N, T, t);
    } else if (rc == 0 && algo == COLL_DIRECT) {
        int64_t f = 0;
        for (int32_t i = 0; i < N; i++)
            for (int32_t k = 1; k < N; k++, f++) {
                src[f] = v->rank[i];
                dst[f] = v->rank[(i + k) % N];
            }
        rc = step_time(nw, src, dst, f, T / N, t);
    } else {
        for (int32_t k = 1; k < N && rc == 0; k++) {
            for (int32_t i = 0; i < N; i++) {
                src[i] = v->rank[i];
                dst[i] = v->rank[(i + k) % N];
            }
            double st;
            rc = step_time(nw, src, dst, N, T / N, &st);
            *t += st;
        }
    }
    free(src);
    free(dst);
    return rc;
}

/* Alltoall and sendrecv: off a mesh from the flows they run, on a mesh
 * as a link per pair (direct is one step, pairwise N - 1). Returns 0, or
 * -1 when out of memory. */
static int copies_time(const net *nw, const coll_view *v, enum coll_op op,
                       int algo, double T, ab x, int topo, double *t)
{
    double a = x.a, b = x.b, Nd = v->N;
    *t = 0;
    if (topo)
        return copies_cost(nw, v, op, algo, T, t);
    if (op == COLL_SENDRECV)
        *t = a + T / b;
    else
        *t = (algo == COLL_PAIRWISE ? v->N - 1 : 1) * (a + T / (Nd * b));
    return 0;
}

/* The binomial tree: off a mesh its steps up (reduce) and down
 * (broadcast) from their flows, on a mesh log2 N hops each way. Returns
 * 0, or -1 when out of memory. */
static int binomial_time(const net *nw, const coll_view *v, enum coll_op op,
                         double T, ab x, int topo, double *t)
{
    if (!topo) {
        *t = ceil_log2(v->N) * (x.a + T / x.b) * (op == COLL_ALLREDUCE ? 2 : 1);
        return 0;
    }
    double up = 0, down = 0;
    int oom = 0;
    int32_t r = op == COLL_ALLREDUCE ? 0 : v->root;
    if (op != COLL_BROADCAST)
        oom |= tree_steps(nw, v, r, 1, T, &up);
    if (op != COLL_REDUCE)
        oom |= tree_steps(nw, v, r, 0, T, &down);
    *t = up + down;
    return oom;
}

/* NCCL's tree and the double binary tree: chunks + 2D - 1 steps of a
 * chunk of half the array; NCCL's tree on nodes of rpn (one rank per node
 * without them). Off a mesh, slotted trees are pipelined (coll/tree.c) in
 * NCCL's chunks and the others costed step by step (dbt_cost); on a mesh
 * every step alike. Returns 0, or -1 when out of memory. */
static int trees_time(const coll_spec *spec, const net *nw, const coll_view *v,
                      int algo, double T, ab x, int topo, double *t,
                      int32_t *chunks)
{
    int32_t N = v->N, rpn = spec->ranks_per_node;
    double a = x.a, b = x.b;
    int32_t trpn = algo == COLL_TREE ? (rpn < 2 ? 1 : rpn) : 0;
    double fixed = 2.0 * coll_btree_depth(N) - 1;
    if (trpn > 1) {
        int32_t H = 0;
        int32_t *buf = malloc((size_t)N * 6 * sizeof *buf);
        if (!buf)
            return -1;
        coll_tree_build(N, trpn, buf, buf + 2 * N, buf + 4 * N, &H);
        free(buf);
        fixed = 2.0 * H - 1;
    }
    if (topo && algo == COLL_TREE && coll_slots(spec, nw, algo) > 1) {
        int32_t C = coll_ring_channels(spec, nw, v);
        *chunks = spec->chunks
                      ? spec->chunks
                      : coll_tree_chunks(spec, spec->protocol, N, C, v->n);
        return coll_tree_pipe_cost(nw, v, trpn, C, T, *chunks,
                                   coll_slots(spec, nw, algo), t);
    }
    if (topo)
        return dbt_cost(nw, v, trpn,
                        algo == COLL_TREE ? coll_ring_channels(spec, nw, v) : 1,
                        T, spec->chunks, t, chunks);
    if (spec->chunks) {
        *chunks = spec->chunks;
        *t = (*chunks + fixed) * (a + T / (2.0 * *chunks * b));
    } else {
        *t = chunked(fixed, a, 2 * b, T, v->n / 2, chunks);
    }
    return 0;
}

/* Recursive halving and doubling on the largest power of two p2 <= N,
 * the ranks past it folded in before and out after. */
static double halving_doubling_time(enum coll_op op, int32_t N, double T, ab x)
{
    double a = x.a, b = x.b, Nd = N;
    int32_t p2 = 1;
    while (p2 * 2 <= N)
        p2 *= 2;
    double lp2 = ceil_log2(p2), fold = p2 < N;
    double t = lp2 * a + (p2 - 1) / (double)p2 * T / b;
    if (op == COLL_ALLREDUCE)
        return 2 * t + fold * 2 * (a + T / b);
    return t + fold * (2 * a + T / b + T / (Nd * b));
}

/* The hierarchical allreduce: a ring inside each node of rpn ranks, then
 * a ring across the m nodes on 1 / rpn of the array, each on its slowest
 * link. */
static double hierarchical_time(const net *nw, const coll_view *v, int32_t rpn,
                                double T)
{
    int32_t N = v->N, m = N / rpn;
    double t = 0;
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
    return t;
}

/* The time of algo once the inputs are known good: one case per
 * algorithm family, each on the mesh's (a, b) or, off a mesh, from the
 * flows it runs. Returns 0, or -1 when out of memory. */
static int algo_time(const coll_spec *spec, const net *nw, const coll_view *v,
                     int algo, double T, double *t, int32_t *chunks)
{
    enum coll_op op = spec->op;
    int32_t N = v->N, rpn = spec->ranks_per_node;
    ab x = pairs_all(nw, v);
    double a = x.a, b = x.b, Nd = N, lg = ceil_log2(N);
    /* off a mesh, ring and trees are costed from the flows they run */
    int topo = !net_is_mesh(nw);
    double c = 1;
    *t = 0;
    if (op == COLL_ALLTOALL || op == COLL_SENDRECV)
        return copies_time(nw, v, op, algo, T, x, topo, t);
    switch (algo) {
    case COLL_RING: {
        int32_t steps = (N - 1) * (op == COLL_ALLREDUCE ? 2 : 1);
        if (topo)
            return ring_step(nw, v, rpn, coll_ring_channels(spec, nw, v), T,
                             steps, coll_slots(spec, nw, algo), t);
        /* every hop alike: pipelining saves nothing */
        *t = steps * (a + T / (Nd * b));
        return 0;
    }
    case COLL_BINOMIAL_TREE: return binomial_time(nw, v, op, T, x, topo, t);
    case COLL_TREE:
    case COLL_DOUBLE_BINARY_TREE:
        return trees_time(spec, nw, v, algo, T, x, topo, t, chunks);
    case COLL_HALVING_DOUBLING:
        *t = halving_doubling_time(op, N, T, x);
        return 0;
    case COLL_DIRECT:
    case COLL_NVLS: /* its pattern, on scaled bytes (coll_wire) */
        if (direct_contention(nw, v, &c))
            return -1;
        *t = (a + c * T / (Nd * b)) * (op == COLL_ALLREDUCE ? 2 : 1);
        return 0;
    case COLL_HIERARCHICAL: *t = hierarchical_time(nw, v, rpn, T); return 0;
    case COLL_PIPELINE:
        if (spec->chunks) {
            *chunks = spec->chunks;
            *t = (*chunks + N - 2) * (a + T / (*chunks * b));
        } else {
            *t = chunked(N - 2, a, b, T, v->n, chunks);
        }
        return 0;
    case COLL_SCATTER_ALLGATHER:
        *t = lg * a + (N - 1) * T / (Nd * b) + (N - 1) * (a + T / (Nd * b));
        return 0;
    }
    return 0;
}

/* The cost of algo moving T bytes on the wire (the payload times the
 * protocol's wire factor): the inputs checked here, the time by
 * algo_time. */
static int predict(const coll_spec *spec, const net *nw, const coll_view *v,
                   int algo, double T, double *seconds, int32_t *chunks,
                   ps_err *err)
{
    enum coll_op op = spec->op;
    int32_t N = v->N;
    *chunks = 1;
    if (!coll_algo_applies(op, algo))
        return ps_errf(err, "%s has no algorithm '%s'", coll_op_names_[op],
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
    double t = 0;
    if (algo_time(spec, nw, v, algo, T, &t, chunks))
        return ps_errf(err, "out of memory");
    *seconds = t;
    return PS_OK;
}

/* The smallest bandwidth any of nf flows gets when they all run at once
 * (flows_ab), into *b. Returns 0, or -1 when out of memory. */
static int flows_min_bw(const net *nw, const int32_t *src, const int32_t *dst,
                        int64_t nf, double *b)
{
    double *lat = malloc(((size_t)nf + 1) * sizeof *lat);
    double *bw = malloc(((size_t)nf + 1) * sizeof *bw);
    int rc = lat && bw ? coll_flows_ab(nw, src, dst, nf, lat, bw) : -1;
    *b = INFINITY;
    for (int64_t f = 0; f < nf && rc == 0; f++)
        if (bw[f] < *b)
            *b = bw[f];
    free(lat);
    free(bw);
    return rc;
}

/* The algorithm bandwidth (payload bytes / s) ring or NCCL's tree reaches
 * at large sizes on nw at one wire byte per payload byte: the bandwidth
 * terms of the cost models above. Ring: `steps` steps each moving a block
 * T / (C N) at the slowest flow's share b (ring_step), C N b / steps; on a
 * mesh N b / steps. Tree: in the steady state every edge of both trees of
 * every channel carries a chunk of T / (2 k C) at once, k chunks in all
 * (dbt_cost), 2 C b; on a mesh 2 b. Returns 0, or -1 when out of memory. */
int coll_cost_algbw(const coll_spec *spec, const net *nw, const coll_view *v,
                    int algo, double *A)
{
    int32_t N = v->N, rpn = spec->ranks_per_node;
    int32_t C = coll_ring_channels(spec, nw, v);
    int topo = !net_is_mesh(nw);
    int32_t steps = (N - 1) * (spec->op == COLL_ALLREDUCE ? 2 : 1);
    *A = INFINITY;
    if (!topo) {
        ab x = pairs_all(nw, v);
        *A = algo == COLL_RING ? N * x.b / steps : 2 * x.b;
        return 0;
    }
    int64_t nf = algo == COLL_RING ? (int64_t)C * N : 4 * (int64_t)C * N;
    int32_t *src = malloc(((size_t)nf + 1) * sizeof *src);
    int32_t *dst = malloc(((size_t)nf + 1) * sizeof *dst);
    int32_t *par = malloc(((size_t)N * 6 + 1) * sizeof *par);
    int rc = src && dst && par ? 0 : -1;
    double b = INFINITY;
    if (rc == 0 && algo == COLL_RING) {
        ring_flows(v, rpn, C, src, dst);
        rc = flows_min_bw(nw, src, dst, nf, &b);
        *A = (double)C * N * b / steps;
    } else if (rc == 0) { /* as dbt_cost builds NCCL's tree */
        int32_t trpn = rpn < 2 ? 1 : rpn, H = 0;
        if (C < 1 || trpn < 2 || N % trpn || N == trpn)
            C = 1;
        coll_tree_build(N, trpn, par, par + 2 * N, par + 4 * N, &H);
        nf = 0;
        for (int32_t ch = 0; ch < C; ch++) {
            int32_t st = C > 1 ? coll_ring_start(trpn, C, ch) : 0;
            for (int32_t tr = 0; tr < 2; tr++)
                for (int32_t x = 0; x < N; x++) {
                    int32_t p = par[tr * N + x];
                    if (p < 0)
                        continue;
                    int32_t rx = C > 1 ? coll_tree_rot(x, trpn, st) : x;
                    int32_t rp = C > 1 ? coll_tree_rot(p, trpn, st) : p;
                    src[nf] = v->rank[rx];
                    dst[nf++] = v->rank[rp];
                    src[nf] = v->rank[rp];
                    dst[nf++] = v->rank[rx];
                }
        }
        rc = flows_min_bw(nw, src, dst, nf, &b);
        *A = 2.0 * C * b;
    }
    free(src);
    free(dst);
    free(par);
    return rc;
}

int coll_cost_predict(const coll_spec *spec, const net *nw, const coll_view *v,
                      int algo, double bytes, double *seconds, int32_t *chunks,
                      ps_err *err)
{
    return predict(spec, nw, v, algo, bytes, seconds, chunks, err);
}
