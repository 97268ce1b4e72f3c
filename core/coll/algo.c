/* Collective algorithms as step-major transfer lists: each generator emits
 * every transfer of step s before any of step s+1 for a given position, so
 * lanes come out in order and each position's ops of one step are
 * contiguous and can be batched. Work is O(transfers) per generator. */
#include "coll/algo.h"

#include <assert.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ */
/* Rings over a member list (positions), on elements [lo, lo + len)    */

/* Member r ends with shard r of the range fully reduced. m-1 steps. */
static int32_t ring_rs(coll_gen *g, const int32_t *mem, int32_t m, int64_t lo,
                       int64_t len, int32_t s0)
{
    for (int32_t k = 0; k + 1 < m; k++)
        for (int32_t r = 0; r < m; r++) {
            int32_t s = ((r - k - 1) % m + m) % m;
            coll_emit(g, s0 + k, mem[r], mem[(r + 1) % m],
                      lo + coll_seg_lo(len, m, s), coll_seg_cnt(len, m, s), 1);
        }
    return m - 1;
}

/* Member r starts with shard r; all end with the whole range. m-1 steps. */
static int32_t ring_ag(coll_gen *g, const int32_t *mem, int32_t m, int64_t lo,
                       int64_t len, int32_t s0)
{
    for (int32_t k = 0; k + 1 < m; k++)
        for (int32_t r = 0; r < m; r++) {
            int32_t s = ((r - k) % m + m) % m;
            coll_emit(g, s0 + k, mem[r], mem[(r + 1) % m],
                      lo + coll_seg_lo(len, m, s), coll_seg_cnt(len, m, s), 0);
        }
    return m - 1;
}

/* ------------------------------------------------------------------ */
/* Ring channels (NCCL's rings on multi-NIC nodes)                     */

/* C rings over nodes of rpn consecutive positions, all advancing in the
 * same steps (one batch per position and step). Ring c visits every node's
 * positions in local order starting at st = coll_ring_start(rpn, C, c), so
 * it enters node n+1 at local st and leaves node n from local st - 1: the
 * channels enter and leave each node through different GPUs and so, on a
 * cluster, through different NICs. This matches NCCL's ring graphs (the
 * pattern "NET n -> GPU a -> .. -> GPU x -> NET n" of src/graph/search.cc,
 * where each channel starts from another NIC and its nearest GPU, and
 * connectRings in src/graph/connect.cc joins node n's last GPU of channel
 * c to node n+1's first): per node and direction each NIC carries one
 * channel. Without PXN the leaving GPU's own NIC is used, not the entry
 * NIC, which only matters on rail-optimised fabrics (not modelled).
 * Blocks: allreduce gives channel c the contiguous slice c of the array,
 * split in N blocks as a single ring would; reduce_scatter and allgather
 * give it sub-slice c of every position's shard (NCCL splits each rank's
 * chunk over the channels), so that position p still ends with, or starts
 * from, shard p. O(C N) memory, O(transfers) time. */
static int32_t ring_channels(coll_gen *g, enum coll_op op, int32_t rpn,
                             int32_t C)
{
    int32_t N = g->N;
    assert(rpn > 1 && N % rpn == 0 && N / rpn >= 2 && C >= 1);
    size_t cells = (size_t)C * (size_t)N;
    int32_t *mem = malloc(cells * sizeof *mem);
    int64_t *blo = malloc(cells * sizeof *blo);
    int64_t *bcnt = malloc(cells * sizeof *bcnt);
    int32_t s = 0;
    if (!mem || !blo || !bcnt) {
        g->oom = 1;
        goto done;
    }
    for (int32_t c = 0; c < C; c++) {
        int32_t st = coll_ring_start(rpn, C, c);
        int32_t *m = mem + (size_t)c * N;
        int64_t *lo = blo + (size_t)c * N, *cnt = bcnt + (size_t)c * N;
        for (int32_t k = 0; k < N; k++)
            m[k] = k - k % rpn + (k % rpn + st) % rpn;
        int64_t clo = coll_seg_lo(g->n, C, c), clen = coll_seg_cnt(g->n, C, c);
        for (int32_t k = 0; k < N; k++) {
            if (op == COLL_ALLREDUCE) {
                lo[k] = clo + coll_seg_lo(clen, N, k);
                cnt[k] = coll_seg_cnt(clen, N, k);
            } else {
                int32_t p = m[k];
                int64_t sc = coll_seg_cnt(g->n, N, p);
                lo[k] = coll_seg_lo(g->n, N, p) + coll_seg_lo(sc, C, c);
                cnt[k] = coll_seg_cnt(sc, C, c);
            }
        }
    }
    /* reduce-scatter: member r ends with block r; allgather: starts with
     * it (see ring_rs and ring_ag) */
    for (int phase = 0; phase < 2; phase++) {
        if ((phase == 0 && op == COLL_ALLGATHER) ||
            (phase == 1 && op == COLL_REDUCE_SCATTER))
            continue;
        for (int32_t k = 0; k + 1 < N; k++, s++)
            for (int32_t c = 0; c < C; c++) {
                const int32_t *m = mem + (size_t)c * N;
                g->chan = c;
                const int64_t *lo = blo + (size_t)c * N;
                const int64_t *cnt = bcnt + (size_t)c * N;
                for (int32_t r = 0; r < N; r++) {
                    int32_t b = ((r - k - (phase == 0)) % N + N) % N;
                    coll_emit(g, s, m[r], m[(r + 1) % N], lo[b], cnt[b],
                              phase == 0);
                }
            }
    }
done:
    g->chan = 0;
    free(mem);
    free(blo);
    free(bcnt);
    return g->oom ? 0 : s;
}

/* ------------------------------------------------------------------ */
/* Binomial trees over positions, relative to root                     */

static int32_t ceil_log2(int32_t n)
{
    int32_t k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* Reduce to root: relative rank v sends to v - mask at the step of its
 * lowest set bit. ceil(log2 N) steps. */
static int32_t tree_reduce(coll_gen *g, int32_t root, int32_t s0)
{
    int32_t N = g->N, steps = ceil_log2(N);
    for (int32_t k = 0; k < steps; k++) {
        int32_t mask = 1 << k;
        for (int32_t v = mask; v < N; v += 2 * mask)
            coll_emit(g, s0 + k, (v + root) % N, (v - mask + root) % N, 0, g->n,
                      1);
    }
    return steps;
}

/* Broadcast from root: in the step with distance mask (descending), every
 * v that is a multiple of 2 mask sends to v + mask. ceil(log2 N) steps. */
static int32_t tree_bcast(coll_gen *g, int32_t root, int32_t s0)
{
    int32_t N = g->N, steps = ceil_log2(N);
    for (int32_t k = 0; k < steps; k++) {
        int32_t mask = 1 << (steps - 1 - k);
        for (int32_t v = 0; v + mask < N; v += 2 * mask)
            coll_emit(g, s0 + k, (v + root) % N, (v + mask + root) % N, 0, g->n,
                      0);
    }
    return steps;
}

/* ------------------------------------------------------------------ */
/* Halving-doubling (Rabenseifner), with the extra ranks of a          */
/* non-power-of-two N folded in by a pre- and a post-step.             */

typedef struct hd {
    int32_t p2, r; /* largest power of two <= N; N - p2 */
} hd;

static int32_t hd_orig(const hd *h, int32_t j)
{
    return j < h->r ? 2 * j + 1 : j + h->r;
}

/* Elements of newranks [a, b): newrank j < r owns shards 2j and 2j+1. */
static int64_t hd_lo(const coll_gen *g, const hd *h, int32_t j)
{
    int32_t first = j < h->r ? 2 * j : j + h->r;
    return coll_seg_lo(g->n, g->N, first);
}

static int32_t hd_halving(coll_gen *g, const hd *h, int32_t s0)
{
    int32_t s = s0;
    for (int32_t d = h->p2 / 2; d >= 1; d /= 2, s++)
        for (int32_t j = 0; j < h->p2; j++) {
            int32_t base = j & ~(2 * d - 1);
            int32_t give = (j & d) ? base : base + d; /* the other half */
            int64_t lo = hd_lo(g, h, give);
            int64_t hi = give + d < h->p2 ? hd_lo(g, h, give + d) : g->n;
            coll_emit(g, s, hd_orig(h, j), hd_orig(h, j ^ d), lo, hi - lo, 1);
        }
    return s - s0;
}

static int32_t hd_doubling(coll_gen *g, const hd *h, int32_t s0)
{
    int32_t s = s0;
    for (int32_t d = 1; d < h->p2; d *= 2, s++)
        for (int32_t j = 0; j < h->p2; j++) {
            int32_t base = j & ~(d - 1);
            int64_t lo = hd_lo(g, h, base);
            int64_t hi = base + d < h->p2 ? hd_lo(g, h, base + d) : g->n;
            coll_emit(g, s, hd_orig(h, j), hd_orig(h, j ^ d), lo, hi - lo, 0);
        }
    return s - s0;
}

static int32_t halving_doubling(coll_gen *g, enum coll_op op, int32_t s0)
{
    hd h = {1, 0};
    while (h.p2 * 2 <= g->N)
        h.p2 *= 2;
    h.r = g->N - h.p2;
    int32_t s = s0;
    if (h.r > 0) { /* fold: even rank 2j hands its data to 2j + 1 */
        for (int32_t j = 0; j < h.r; j++) {
            if (op == COLL_ALLGATHER)
                coll_emit(g, s, 2 * j, 2 * j + 1,
                          coll_seg_lo(g->n, g->N, 2 * j),
                          coll_seg_cnt(g->n, g->N, 2 * j), 0);
            else
                coll_emit(g, s, 2 * j, 2 * j + 1, 0, g->n, 1);
        }
        s++;
    }
    if (op != COLL_ALLGATHER)
        s += hd_halving(g, &h, s);
    if (op != COLL_REDUCE_SCATTER)
        s += hd_doubling(g, &h, s);
    if (h.r > 0) { /* unfold: 2j + 1 hands the result back */
        for (int32_t j = 0; j < h.r; j++) {
            if (op == COLL_REDUCE_SCATTER)
                coll_emit(g, s, 2 * j + 1, 2 * j,
                          coll_seg_lo(g->n, g->N, 2 * j),
                          coll_seg_cnt(g->n, g->N, 2 * j), 0);
            else
                coll_emit(g, s, 2 * j + 1, 2 * j, 0, g->n, 0);
        }
        s++;
    }
    return s - s0;
}

/* ------------------------------------------------------------------ */
/* Direct: every position exchanges shards with every other at once.  */

static int32_t direct(coll_gen *g, enum coll_op op, int32_t s0)
{
    int32_t N = g->N, s = s0;
    if (op != COLL_ALLGATHER) { /* shard i of every rank goes to rank i */
        for (int32_t i = 0; i < N; i++)
            for (int32_t j = 0; j < N; j++)
                if (j != i)
                    coll_emit(g, s, j, i, coll_seg_lo(g->n, N, i),
                              coll_seg_cnt(g->n, N, i), 1);
        s++;
    }
    if (op != COLL_REDUCE_SCATTER) { /* rank i's shard goes to everyone */
        for (int32_t i = 0; i < N; i++)
            for (int32_t j = 0; j < N; j++)
                if (j != i)
                    coll_emit(g, s, i, j, coll_seg_lo(g->n, N, i),
                              coll_seg_cnt(g->n, N, i), 0);
        s++;
    }
    return s - s0;
}

/* ------------------------------------------------------------------ */
/* All-to-all and send/recv (out of place: receive buffer at n)        */

/* alltoall, direct: every position sends block j to position j at once
 * (NCCL's alltoall: a group of N - 1 sends and receives). One step. */
static int32_t alltoall_direct(coll_gen *g, int32_t s0)
{
    int32_t N = g->N;
    int64_t b = g->n / N;
    for (int32_t i = 0; i < N; i++)
        for (int32_t k = 1; k < N; k++) {
            int32_t j = (i + k) % N;
            coll_emit_to(g, s0, i, j, (int64_t)j * b, b, g->n + i * b);
        }
    return 1;
}

/* alltoall, pairwise: in step k (1 .. N - 1) position i sends block
 * i + k to position i + k and receives from i - k (MPICH's pairwise
 * exchange, Thakur et al. 2005): one peer per step, no incast. */
static int32_t alltoall_pairwise(coll_gen *g, int32_t s0)
{
    int32_t N = g->N;
    int64_t b = g->n / N;
    for (int32_t k = 1; k < N; k++)
        for (int32_t i = 0; i < N; i++) {
            int32_t j = (i + k) % N;
            coll_emit_to(g, s0 + k - 1, i, j, (int64_t)j * b, b, g->n + i * b);
        }
    return N - 1;
}

/* sendrecv: position i sends its buffer to i + 1 (nccl-tests'
 * sendrecv_perf ring). One step. */
static int32_t sendrecv(coll_gen *g, int32_t s0)
{
    int32_t N = g->N;
    for (int32_t i = 0; i < N; i++)
        coll_emit_to(g, s0, i, (i + 1) % N, 0, g->n, g->n);
    return 1;
}

/* ------------------------------------------------------------------ */
/* Broadcast variants                                                  */

/* Chain root -> root+1 -> ...: relative v forwards chunk s - v in step s.
 * chunks + N - 2 steps. */
static int32_t pipeline(coll_gen *g, int32_t root, int32_t chunks, int32_t s0)
{
    int32_t N = g->N, steps = chunks + N - 2;
    for (int32_t s = 0; s < steps; s++)
        for (int32_t v = 0; v + 1 < N; v++) {
            int32_t c = s - v;
            if (c >= 0 && c < chunks)
                coll_emit(g, s0 + s, (v + root) % N, (v + 1 + root) % N,
                          coll_seg_lo(g->n, chunks, c),
                          coll_seg_cnt(g->n, chunks, c), 0);
        }
    return steps;
}

/* Binomial scatter of shard v to relative rank v, then a ring allgather in
 * relative order. */
static int32_t scatter_allgather(coll_gen *g, int32_t root, int32_t s0)
{
    int32_t N = g->N, steps = ceil_log2(N), s = s0;
    for (int32_t k = 0; k < steps; k++, s++) {
        int32_t mask = 1 << (steps - 1 - k);
        for (int32_t v = 0; v + mask < N; v += 2 * mask) {
            int32_t end = v + 2 * mask < N ? v + 2 * mask : N;
            int64_t lo = coll_seg_lo(g->n, N, v + mask);
            int64_t hi = end < N ? coll_seg_lo(g->n, N, end) : g->n;
            coll_emit(g, s, (v + root) % N, (v + mask + root) % N, lo, hi - lo,
                      0);
        }
    }
    int32_t *mem = malloc((size_t)N * sizeof *mem);
    if (!mem) {
        g->oom = 1;
        return 0;
    }
    for (int32_t v = 0; v < N; v++)
        mem[v] = (v + root) % N;
    s += ring_ag(g, mem, N, 0, g->n, s);
    free(mem);
    return s - s0;
}

/* ------------------------------------------------------------------ */
/* Hierarchical allreduce                                              */

/* Intra-node ring reduce-scatter, then an inter-node ring allreduce of
 * shard l among the ranks with local index l, then an intra-node ring
 * allgather. Nodes are runs of rpn consecutive positions. */
static int32_t hierarchical(coll_gen *g, int32_t rpn, int32_t s0)
{
    int32_t N = g->N, m = N / rpn;
    int32_t *mem = malloc((size_t)(rpn > m ? rpn : m) * sizeof *mem);
    if (!mem) {
        g->oom = 1;
        return 0;
    }
    int32_t s1 = s0 + rpn - 1, s2 = s1 + 2 * (m - 1);
    for (int32_t node = 0; node < m; node++) {
        for (int32_t l = 0; l < rpn; l++)
            mem[l] = node * rpn + l;
        ring_rs(g, mem, rpn, 0, g->n, s0);
    }
    for (int32_t l = 0; l < rpn; l++) {
        for (int32_t node = 0; node < m; node++)
            mem[node] = node * rpn + l;
        int64_t lo = coll_seg_lo(g->n, rpn, l),
                len = coll_seg_cnt(g->n, rpn, l);
        ring_rs(g, mem, m, lo, len, s1);
        ring_ag(g, mem, m, lo, len, s1 + m - 1);
    }
    for (int32_t node = 0; node < m; node++) {
        for (int32_t l = 0; l < rpn; l++)
            mem[l] = node * rpn + l;
        ring_ag(g, mem, rpn, 0, g->n, s2);
    }
    free(mem);
    return s2 + rpn - 1 - s0;
}

/* ------------------------------------------------------------------ */

int32_t coll_generate(coll_gen *g, enum coll_op op, int algo, int32_t root,
                      int32_t rpn, int32_t chunks)
{
    int32_t N = g->N;
    if (N < 2 || g->n == 0)
        return 0;
    if (algo == COLL_RING && g->channels > 1)
        return ring_channels(g, op, rpn, g->channels);
    if (op == COLL_ALLTOALL)
        return algo == COLL_PAIRWISE ? alltoall_pairwise(g, 0)
                                     : alltoall_direct(g, 0);
    if (op == COLL_SENDRECV)
        return sendrecv(g, 0);
    int32_t *all = NULL;
    if (algo == COLL_RING) {
        all = malloc((size_t)N * sizeof *all);
        if (!all) {
            g->oom = 1;
            return 0;
        }
        for (int32_t i = 0; i < N; i++)
            all[i] = i;
    }
    int32_t s = 0;
    switch (algo) {
    case COLL_RING:
        if (op != COLL_ALLGATHER)
            s += ring_rs(g, all, N, 0, g->n, s);
        if (op != COLL_REDUCE_SCATTER)
            s += ring_ag(g, all, N, 0, g->n, s);
        break;
    case COLL_BINOMIAL_TREE:
        if (op != COLL_BROADCAST)
            s += tree_reduce(g, op == COLL_REDUCE ? root : 0, s);
        if (op != COLL_REDUCE)
            s += tree_bcast(g, op == COLL_BROADCAST ? root : 0, s);
        break;
    case COLL_TREE:
        s = coll_double_binary_tree(g, rpn < 2 ? 1 : rpn, g->channels, chunks,
                                    0);
        break;
    case COLL_DOUBLE_BINARY_TREE:
        s = coll_double_binary_tree(g, 0, 1, chunks, 0);
        break;
    case COLL_HALVING_DOUBLING: s = halving_doubling(g, op, 0); break;
    case COLL_DIRECT:
    case COLL_NVLS:
        s = direct(g, op, 0);
        break; /* nvls: scaled (coll/coll.c) */
    case COLL_HIERARCHICAL: s = hierarchical(g, rpn, 0); break;
    case COLL_PIPELINE: s = pipeline(g, root, chunks, 0); break;
    case COLL_SCATTER_ALLGATHER: s = scatter_allgather(g, root, 0); break;
    default: assert(0);
    }
    free(all);
    return s;
}
