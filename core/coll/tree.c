/* NCCL's pipelined tree (slots > 1) in the cost model: the chunk size NCCL
 * runs the tree allreduce with (calcCollChunking, src/enqueue.cc, NCCL
 * 2.30.7, NVIDIA/nccl commit 5067397) and the time of the split tree
 * (coll/dbt.c: up and down lanes, a connection per peer) from the flows it
 * runs. Pure functions of the spec and the network. */
#include <math.h>
#include <stdlib.h>

#include "coll/algo.h"
#include "coll/impl.h"

/* NCCL's buffers per connection (src/init.cc computeBuffSizes and
 * src/include/device.h): LL 8 lines x 512 threads x NCCL_STEPS x 16 B,
 * LL128 120 elements x 640 threads x NCCL_STEPS x 8 B, Simple 4 MiB; a
 * step (one of the NCCL_STEPS slots) is an eighth. */
#define LL_BUFF (8.0 * 512 * COLL_NCCL_STEPS * 16)
#define LL128_BUFF (120.0 * 640 * COLL_NCCL_STEPS * 8)
#define SIMPLE_BUFF (4.0 * 1024 * 1024)

static int32_t log2i(int32_t n)
{
    int32_t k = -1;
    for (; n >= 1; n /= 2)
        k++;
    return k;
}

double coll_tree_chunk(int proto, int32_t nodes, int32_t ppn, double bytes)
{
    /* chunkSize = stepSize x chunkSteps, chunkSteps 1 for the tree; LL
     * carries 8 data bytes per 16-byte line, LL128 120 of 128 */
    if (proto == COLL_LL)
        return LL_BUFF / COLL_NCCL_STEPS / 2;
    if (proto != COLL_LL128)
        return SIMPLE_BUFF / COLL_NCCL_STEPS; /* Simple, and none */
    double chunk = floor(LL128_BUFF / COLL_NCCL_STEPS / 16) * 15;
    /* "nstepsLL128 = 1 + log2i(nNodes) + 0.1 * ppn": halve the chunk
     * while a channel has too few of them (nBytes / chunkSize is integer
     * division there: a channel's own bytes, calcCollChunking is called
     * per channel with nChannels = 1) */
    double ns = 1 + log2i(nodes) + 0.1 * ppn;
    while (floor(bytes / chunk) < ns * 64 / ppn && chunk > 131072)
        chunk = floor(chunk / 2);
    while (floor(bytes / chunk) < ns * 16 / ppn && chunk > 32768)
        chunk = floor(chunk / 2);
    return chunk;
}

int32_t coll_tree_chunks(const coll_spec *spec, int proto, int32_t N, int32_t C,
                         int64_t n)
{
    int32_t rpn = spec->ranks_per_node;
    int32_t nodes = rpn >= 1 && N % rpn == 0 ? N / rpn : N;
    int32_t ppn = N / nodes;
    /* NCCL's channels are the search's doubled (connect.cc: channel c
     * runs tree 0, channel c + C tree 1), each on T / 2C */
    double per = (double)spec->bytes / (2.0 * (C > 0 ? C : 1));
    double k = ceil(per / coll_tree_chunk(proto, nodes, ppn, per));
    int64_t kmax = n / (2 * (C > 0 ? C : 1));
    if (kmax > COLL_MAX_CHUNKS)
        kmax = COLL_MAX_CHUNKS;
    if (kmax < 1)
        kmax = 1;
    return k < 1 ? 1 : k > (double)kmax ? (int32_t)kmax : (int32_t)k;
}

/* The pipelined tree (coll/algo.c tree_split_step): every position sends
 * a chunk of x = T / 2kC to its parent once it holds it from all its
 * children (up) and forwards what its parent sends (down), one chunk
 * after another per connection (one FIFO per peer, net_start_conn), up
 * to NCCL_STEPS ahead; a step's sends to 2-3 children go on together. The
 * first chunk reaches position v after the hops on its way (leaf to root
 * to v), each its route's latency plus x at the flow's share of its links
 * when every flow of both trees and all channels runs (flows_ab: the
 * steady state); the other k - 1 follow at the pace of the slowest flow.
 * So t = max over channels, trees and positions of that fill, plus (k - 1)
 * times the slowest chunk time. With x -> 0 it is the sum of the hop
 * latencies on the longest way, NCCL's tree latency (tuning.cc: 2 ((ppn -
 * 1) intra + log2(nodes) inter) steps). O(C N). */
/* The split tree's flows, both trees of every channel: flow 2i up (x ->
 * parent), 2i + 1 down, i = (ch 2 + tr) N + x, with each flow's offset
 * (its lockstep step, as dbt_cost numbers them) and routes' figures. */
typedef struct {
    int32_t N, H, C, rpn;
    int32_t *par, *dep, *hei; /* coll_tree_build's, 2N each */
    int32_t *ord;             /* per tree, the positions by depth */
    int64_t nf;
    int32_t *src, *dst, *off;
    double *lat, *bw; /* every flow of both trees and all channels at once */
    double *alone;    /* a first chunk's bandwidth among its offset's flows */
} pipe_flows;

/* Lists the positions of each tree by depth and every flow with its
 * offset, channel c's trees rotated within the nodes as NCCL's are. */
static void list_flows(pipe_flows *pf, const coll_view *v)
{
    int32_t N = pf->N, H = pf->H, C = pf->C, rpn = pf->rpn;
    const int32_t *par = pf->par, *dep = pf->dep, *hei = pf->hei;
    for (int32_t tr = 0, j = 0; tr < 2; tr++, j = 0) /* by depth */
        for (int32_t d = 0; d <= H; d++)
            for (int32_t x = 0; x < N; x++)
                if (dep[tr * N + x] == d)
                    pf->ord[tr * N + j++] = x;
    int64_t nf = 0;
    for (int32_t ch = 0; ch < C; ch++) {
        int32_t st = C > 1 ? coll_ring_start(rpn, C, ch) : 0;
        for (int32_t tr = 0; tr < 2; tr++)
            for (int32_t x = 0; x < N; x++) {
                int32_t p = par[tr * N + x];
                if (p < 0)
                    continue;
                int32_t rx = C > 1 ? coll_tree_rot(x, rpn, st) : x;
                int32_t rp = C > 1 ? coll_tree_rot(p, rpn, st) : p;
                pf->off[nf] = hei[tr * N + x];
                pf->src[nf] = v->rank[rx];
                pf->dst[nf++] = v->rank[rp];
                pf->off[nf] = H + dep[tr * N + x] - 1;
                pf->src[nf] = v->rank[rp];
                pf->dst[nf++] = v->rank[rx];
            }
    }
    pf->nf = nf;
}

/* A hop of the first chunk at offset o shares its links with the other
 * first chunks at o and the chunks behind them, offsets o - k + 1 .. o
 * (the lockstep generator's step o; dbt_cost): pf->alone per flow, from
 * the flows of its offset costed together. Returns 0, or -1 when out of
 * memory. */
static int first_chunk_bw(pipe_flows *pf, const net *nw)
{
    int64_t n = pf->nf + 1;
    int32_t *tsrc = malloc((size_t)n * sizeof *tsrc);
    int32_t *tdst = malloc((size_t)n * sizeof *tdst);
    int64_t *tix = malloc((size_t)n * sizeof *tix);
    double *tlat = malloc((size_t)n * sizeof *tlat);
    double *tbw = malloc((size_t)n * sizeof *tbw);
    int rc = tsrc && tdst && tix && tlat && tbw ? 0 : -1;
    for (int32_t o = 0; rc == 0 && o < 2 * pf->H; o++) {
        int64_t m = 0;
        for (int64_t f = 0; f < pf->nf; f++)
            if (pf->off[f] == o) {
                tsrc[m] = pf->src[f];
                tdst[m] = pf->dst[f];
                tix[m++] = f;
            }
        if (coll_flows_ab(nw, tsrc, tdst, m, tlat, tbw)) {
            rc = -1;
            break;
        }
        for (int64_t i = 0; i < m; i++)
            if (pf->off[tix[i]] == o)
                pf->alone[tix[i]] = tbw[i];
    }
    free(tsrc);
    free(tdst);
    free(tix);
    free(tlat);
    free(tbw);
    return rc;
}

/* The first chunk's arrival, latest over channels, trees and positions:
 * up the tree deepest first (a parent waits for its slowest child), then
 * down root first. Returns 0, or -1 when out of memory. */
static int fill_time(const pipe_flows *pf, double x, double *t)
{
    int32_t N = pf->N;
    const int32_t *par = pf->par;
    int64_t *at = malloc(((size_t)N * 2 + 1) * sizeof *at);
    double *reach = malloc(((size_t)N + 1) * sizeof *reach);
    if (!at || !reach) {
        free(at);
        free(reach);
        return -1;
    }
    int64_t f0 = 0; /* first flow of the (channel, tree) */
    for (int32_t ch = 0; ch < pf->C; ch++)
        for (int32_t tr = 0; tr < 2; tr++) {
            /* the flows of this (channel, tree), in position order */
            int64_t f = f0;
            for (int32_t y = 0; y < N; y++) {
                at[tr * N + y] = par[tr * N + y] < 0 ? -1 : f;
                f += par[tr * N + y] < 0 ? 0 : 2;
            }
            f0 = f;
            const int32_t *o = pf->ord + tr * N;
            for (int32_t i = 0; i < N; i++)
                reach[o[i]] = 0;
            for (int32_t i = N - 1; i >= 0; i--) { /* up: deepest first */
                int32_t y = o[i], p = par[tr * N + y];
                if (p < 0)
                    continue;
                int64_t u = at[tr * N + y];
                double r = reach[y] + pf->lat[u] + x / pf->alone[u];
                if (r > reach[p])
                    reach[p] = r;
            }
            for (int32_t i = 0; i < N; i++) { /* down: root first */
                int32_t y = o[i], p = par[tr * N + y];
                if (p < 0)
                    continue;
                int64_t d = at[tr * N + y] + 1;
                reach[y] = reach[p] + pf->lat[d] + x / pf->alone[d];
                if (reach[y] > *t)
                    *t = reach[y];
            }
        }
    free(at);
    free(reach);
    return 0;
}

int coll_tree_pipe_cost(const net *nw, const coll_view *v, int32_t rpn,
                        int32_t C, double T, int32_t k, int32_t slots,
                        double *t)
{
    pipe_flows pf = {.N = v->N, .C = C, .rpn = rpn};
    int32_t N = v->N;
    if (C < 1 || rpn < 2 || N % rpn || N == rpn)
        pf.C = 1;
    int64_t ne = 4 * (int64_t)pf.C * N;
    pf.par = malloc(((size_t)N * 6 + 1) * sizeof *pf.par);
    pf.ord = malloc(((size_t)N * 2 + 1) * sizeof *pf.ord);
    pf.src = malloc(((size_t)ne + 1) * sizeof *pf.src);
    pf.dst = malloc(((size_t)ne + 1) * sizeof *pf.dst);
    pf.off = malloc(((size_t)ne + 1) * sizeof *pf.off);
    pf.lat = malloc(((size_t)ne + 1) * sizeof *pf.lat);
    pf.bw = malloc(((size_t)ne + 1) * sizeof *pf.bw);
    pf.alone = malloc(((size_t)ne + 1) * sizeof *pf.alone);
    int rc = -1;
    *t = 0;
    if (!pf.par || !pf.ord || !pf.src || !pf.dst || !pf.off || !pf.lat ||
        !pf.bw || !pf.alone)
        goto done;
    pf.dep = pf.par + 2 * N;
    pf.hei = pf.par + 4 * N;
    coll_tree_build(N, rpn, pf.par, pf.dep, pf.hei, &pf.H);
    list_flows(&pf, v);
    if (first_chunk_bw(&pf, nw) ||
        coll_flows_ab(nw, pf.src, pf.dst, pf.nf, pf.lat, pf.bw))
        goto done;
    /* a connection moves a chunk per x / bw, and `slots` chunks at most
     * per trip of one (chunk c leaves once chunk c - slots has landed:
     * NCCL_STEPS buffers per connection) */
    double x = T / (2.0 * k * pf.C), slow = 0, trip = 0;
    for (int64_t f = 0; f < pf.nf; f++) {
        slow = fmax(slow, x / pf.bw[f]);
        trip = fmax(trip, pf.lat[f] + x / pf.bw[f]);
    }
    int32_t S = slots > 1 ? slots : 1;
    if (fill_time(&pf, x, t))
        goto done;
    *t += fmax((k - 1) * slow, (double)((k + S - 1) / S - 1) * trip);
    rc = 0;
done:
    free(pf.par);
    free(pf.ord);
    free(pf.src);
    free(pf.dst);
    free(pf.off);
    free(pf.lat);
    free(pf.bw);
    free(pf.alone);
    return rc;
}
