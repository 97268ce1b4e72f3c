/* NCCL's double binary tree as a collective algorithm: the shape of its
 * two trees (ncclGetBtree / ncclGetDtree, the intra-node chain of
 * ncclTopoPreset) and the generator of its transfers, step by step or
 * pipelined with up and down lanes (runTreeSplit). coll/algo.c's
 * coll_generate calls it; coll/cost.c and coll/tree.c cost the same shape. */
#include "coll/dbt.h"

#include <stdlib.h>
#include <string.h>

/* Parent of r in NCCL's binary tree over n ranks (ncclGetBtree): the
 * parent has the next higher lowest set bit; -1 for the root 0. */
static int32_t btree_parent(int32_t n, int32_t r)
{
    if (r == 0)
        return -1;
    int32_t bit = r & -r;
    int32_t up = (r ^ bit) | (bit << 1);
    return up >= n ? (r ^ bit) : up;
}

/* The second tree is the first mirrored (even n) or shifted by one (odd n),
 * so that, as in ncclGetDtree, a rank that is a leaf in one tree is an
 * inner node in the other. */
static int32_t dtree_parent(int32_t n, int32_t t, int32_t r)
{
    if (t == 0)
        return btree_parent(n, r);
    int32_t m = n % 2 ? (r - 1 + n) % n : n - 1 - r;
    int32_t p = btree_parent(n, m);
    if (p < 0)
        return -1;
    return n % 2 ? (p + 1) % n : n - 1 - p;
}

int32_t coll_btree_depth(int32_t n)
{
    int32_t deepest = 0;
    for (int32_t r = 0; r < n; r++) {
        int32_t d = 0;
        for (int32_t v = r; v > 0; v = btree_parent(n, v))
            d++;
        if (d > deepest)
            deepest = d;
    }
    return deepest;
}

/* Depths and heights of two trees given by parent (2N entries), and the
 * greatest depth *H (coll_dtree's outputs). */
static void tree_shape(int32_t N, const int32_t *parent, int32_t *depth,
                       int32_t *height, int32_t *H)
{
    *H = 0;
    memset(height, 0, (size_t)N * 2 * sizeof *height);
    for (int32_t t = 0; t < 2; t++) {
        const int32_t *par = parent + t * N;
        int32_t *dep = depth + t * N, *hei = height + t * N;
        for (int32_t v = 0; v < N; v++) {
            int32_t d = 0;
            for (int32_t u = v; par[u] >= 0; u = par[u]) {
                d++;
                if (hei[par[u]] < d)
                    hei[par[u]] = d;
            }
            dep[v] = d;
            if (d > *H)
                *H = d;
        }
    }
}

int coll_dtree(int32_t N, int32_t *parent, int32_t *depth, int32_t *height,
               int32_t *H)
{
    for (int32_t t = 0; t < 2; t++)
        for (int32_t v = 0; v < N; v++)
            parent[t * N + v] = dtree_parent(N, t, v);
    tree_shape(N, parent, depth, height, H);
    return 0;
}

int coll_tree_build(int32_t N, int32_t rpn, int32_t *parent, int32_t *depth,
                    int32_t *height, int32_t *H)
{
    if (rpn < 2 || N % rpn || N == rpn) {
        if (rpn >= 2 && N == rpn) { /* one node: the chain alone */
            for (int32_t t = 0; t < 2; t++)
                for (int32_t v = 0; v < N; v++)
                    parent[t * N + v] = t == 0 ? v - 1 : v + 1 < N ? v + 1 : -1;
            tree_shape(N, parent, depth, height, H);
            return 0;
        }
        return coll_dtree(N, parent, depth, height, H);
    }
    int32_t m = N / rpn;
    for (int32_t t = 0; t < 2; t++)
        for (int32_t node = 0; node < m; node++) {
            int32_t pn = dtree_parent(m, t, node);
            int32_t head = t == 0 ? 0 : rpn - 1;
            for (int32_t l = 0; l < rpn; l++) {
                int32_t v = node * rpn + l, p;
                if (l == head)
                    p = pn < 0 ? -1 : pn * rpn + head;
                else
                    p = node * rpn + (t == 0 ? l - 1 : l + 1);
                parent[t * N + v] = p;
            }
        }
    tree_shape(N, parent, depth, height, H);
    return 0;
}

/* Two trees, each reducing then broadcasting half of the array in `chunks`
 * pipelined chunks: node v sends chunk c to its parent in step c + h(v)
 * (h: height of its subtree) and receives the reduced chunk c from its
 * parent in step c + H + d(v) - 1 (H: tree height, d: depth). Steps:
 * chunks + 2H - 1. The trees are NCCL's double binary tree over all
 * positions (rpn = 0) or NCCL's tree over nodes of rpn (coll_tree_build).
 *
 * Channels (C > 1, NCCL's tree on whole nodes: coll_ring_channels,
 * one per NIC or doubled): NCCL
 * runs the tree on every channel of its topology search, each channel's
 * chain starting at the GPU next to that channel's NIC (the tree pattern
 * `NET n -> GPU a -> .. -> GPU x` of src/graph/search.cc) and each search
 * channel running both trees of ncclGetDtree (src/graph/trees.cc,
 * connectTrees in src/graph/connect.cc). Channel c is both trees with
 * every node's local indices rotated by coll_ring_start(rpn, C, c), as the
 * ring's channels are, on the c-th contiguous slice of the array: tree 0's
 * head is local start_c (its NIC c), tree 1's local start_c - 1, so each
 * NIC carries one channel's tree 0 and its neighbour's tree 1. All
 * channels run the same steps; a step's transfers form one batch. */
/* A SIGNAL or WAIT op (signal id) at the end of lane slot sl. */
static void sig_op(coll_gen *g, int32_t sl, enum prog_type type, int32_t id)
{
    if (g->counting) {
        g->ops[sl]++;
        return;
    }
    if (g->oom)
        return;
    prog_op op = {
        .msg = id, .mb = -1, .type = (uint8_t)type, .kind = PROG_COLL};
    prog_lane *lane = &g->ps->lanes[g->lane[sl]];
    if (lane->n < lane->cap)
        lane->ops[lane->n++] = op;
    else if (prog_push(g->ps, g->lane[sl], &op))
        g->oom = 1;
}

/* The pipelined tree (slots S > 1): every position runs each tree of each
 * channel in two lanes, the reduction up and the broadcast down, as NCCL's
 * runTreeSplit runs them in two groups of threads (src/device/all_reduce.h,
 * NCCL 2.30.7; the root's one loop, directRecvReduceCopyDirectSend, in its
 * up lane). A send of chunk c waits for its receiver to have finished the
 * step in which it received chunk c - S on the same connection (the slot
 * is free again: NCCL_STEPS slots per connection, src/include/device.h).
 * The lane does not wait for its sends: one step hands the chunk to every
 * peer (up to NCCL_MAX_TREE_ARITY = 3 children) and moves on, each peer
 * through its own connection FIFO (prims_simple.h: postPeer per send
 * connection, the proxy sends each in order), which the engine keeps per
 * (lane, peer) (net_start_conn): a connection's chunks follow each other
 * on the link, the children's connections share it. */
static void tree_split_step(coll_gen *g, int32_t s, int32_t s0, int32_t N,
                            int32_t C, int32_t rpn, int32_t H, int32_t chunks,
                            const int32_t *parent, const int32_t *depth,
                            const int32_t *height, const int32_t *ord,
                            int32_t sigbase, int32_t *pend, int32_t *npend)
{
    int32_t S = g->slots;
    for (int32_t ch = 0; ch < C; ch++) {
        int32_t st = C > 1 ? coll_ring_start(rpn, C, ch) : 0;
        int64_t clo = coll_seg_lo(g->n, C, ch);
        int64_t clen = coll_seg_cnt(g->n, C, ch);
        int64_t half[2] = {clen / 2, clen - clen / 2};
        int64_t base[2] = {clo, clo + clen / 2};
        for (int32_t t = 0; t < 2; t++)
            for (int32_t dir = 1; dir >= 0; dir--) /* down, then up */
                for (int32_t i = 0; i < N; i++) {
                    /* down: deepest first, up: root first, so that in every
                     * lane a step's sends come before its receives */
                    int32_t v = ord[t * N + (dir ? N - 1 - i : i)];
                    int32_t p = parent[t * N + v];
                    if (p < 0)
                        continue;
                    int32_t c = dir ? s - H - depth[t * N + v] + 1
                                    : s - height[t * N + v];
                    if (c < 0 || c >= chunks)
                        continue;
                    int32_t rv = C > 1 ? coll_tree_rot(v, rpn, st) : v;
                    int32_t rp = C > 1 ? coll_tree_rot(p, rpn, st) : p;
                    int32_t up = ch * 4 + t * 2, dn = up + 1;
                    int32_t src = dir ? rp : rv, dst = dir ? rv : rp;
                    int32_t ssub =
                        dir ? (parent[t * N + p] >= 0 ? dn : up) : up;
                    int32_t dsub = dir ? dn : up;
                    int32_t conn = ((ch * 2 + t) * N + v) * 2 + dir;
                    if (c >= S)
                        sig_op(g, src + ssub * N, PROG_WAIT,
                               sigbase + conn * chunks + c - S);
                    if (c + S < chunks) {
                        int32_t dl = dst + dsub * N;
                        pend[dl * 4 + npend[dl]++] =
                            sigbase + conn * chunks + c;
                    }
                    g->chan = ssub;
                    g->chan_to = dsub;
                    coll_emit(g, s0 + s, src, dst,
                              base[t] + coll_seg_lo(half[t], chunks, c),
                              coll_seg_cnt(half[t], chunks, c), !dir);
                    g->chan_to = -1;
                }
    }
}

/* The signals of the receives lane slot sl holds pending, after them. */
static void flush_pend(coll_gen *g, int32_t nl, int32_t *pend, int32_t *npend)
{
    for (int32_t sl = 0; sl < nl; sl++) {
        for (int32_t j = 0; j < npend[sl]; j++)
            sig_op(g, sl, PROG_SIGNAL, pend[sl * 4 + j]);
        npend[sl] = 0;
    }
}

int32_t coll_double_binary_tree(coll_gen *g, int32_t rpn, int32_t C,
                                int32_t chunks, int32_t s0)
{
    int32_t N = g->N;
    int32_t *parent = malloc((size_t)N * 2 * sizeof *parent);
    int32_t *depth = malloc((size_t)N * 2 * sizeof *depth);
    int32_t *height = malloc((size_t)N * 2 * sizeof *height);
    int32_t H = 0;
    if (!parent || !depth || !height) {
        g->oom = 1;
        goto done;
    }
    if (rpn)
        coll_tree_build(N, rpn, parent, depth, height, &H);
    else
        coll_dtree(N, parent, depth, height, &H);
    if (C < 1 || rpn < 2 || N % rpn || N == rpn)
        C = 1;
    int32_t steps = chunks + 2 * H - 1;
    if (g->slots > 1 && g->chan_lanes >= 4 * C) {
        int32_t nl = g->chan_lanes * N;
        int32_t *ord = malloc((size_t)N * 2 * sizeof *ord);
        int32_t *pend = malloc((size_t)nl * 4 * sizeof *pend);
        int32_t *npend = calloc((size_t)nl, sizeof *npend);
        if (!ord || !pend || !npend) {
            g->oom = 1;
        } else {
            for (int32_t t = 0, k = 0; t < 2; t++, k = 0) /* by depth */
                for (int32_t d = 0; d <= H; d++)
                    for (int32_t v = 0; v < N; v++)
                        if (depth[t * N + v] == d)
                            ord[t * N + k++] = v;
            int32_t sigbase = g->ps->nsignals;
            if (!g->counting)
                g->ps->nsignals += 4 * C * N * chunks;
            for (int32_t s = 0; s < steps; s++) {
                flush_pend(g, nl, pend, npend);
                tree_split_step(g, s, s0, N, C, rpn, H, chunks, parent, depth,
                                height, ord, sigbase, pend, npend);
            }
            flush_pend(g, nl, pend, npend);
        }
        free(ord);
        free(pend);
        free(npend);
        goto done;
    }
    for (int32_t s = 0; s < steps; s++)
        for (int32_t ch = 0; ch < C; ch++) {
            int32_t st = C > 1 ? coll_ring_start(rpn, C, ch) : 0;
            g->chan = ch;
            int64_t clo = coll_seg_lo(g->n, C, ch);
            int64_t clen = coll_seg_cnt(g->n, C, ch);
            int64_t half[2] = {clen / 2, clen - clen / 2};
            int64_t base[2] = {clo, clo + clen / 2};
            for (int32_t t = 0; t < 2; t++)
                for (int32_t v = 0; v < N; v++) {
                    int32_t p = parent[t * N + v];
                    if (p < 0)
                        continue;
                    int32_t rv = C > 1 ? coll_tree_rot(v, rpn, st) : v;
                    int32_t rp = C > 1 ? coll_tree_rot(p, rpn, st) : p;
                    int32_t c = s - height[t * N + v];
                    if (c >= 0 && c < chunks)
                        coll_emit(g, s0 + s, rv, rp,
                                  base[t] + coll_seg_lo(half[t], chunks, c),
                                  coll_seg_cnt(half[t], chunks, c), 1);
                    c = s - H - depth[t * N + v] + 1;
                    if (c >= 0 && c < chunks)
                        coll_emit(g, s0 + s, rp, rv,
                                  base[t] + coll_seg_lo(half[t], chunks, c),
                                  coll_seg_cnt(half[t], chunks, c), 0);
                }
        }
done:
    free(parent);
    free(depth);
    free(height);
    return g->oom ? 0 : chunks + 2 * H - 1;
}
