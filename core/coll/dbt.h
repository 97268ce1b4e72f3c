/* Internal to the coll module: NCCL's trees (coll/dbt.c), their shapes
 * and the double binary tree generator, over the emitter of coll/emit.h. */
#ifndef PS_COLL_DBT_H
#define PS_COLL_DBT_H

#include <stdint.h>

#include "coll/emit.h"

/* NCCL's double binary tree (coll/dbt.c) from step s0, in chunks: over
 * all positions (rpn = 0) or NCCL's tree over nodes of rpn positions, on C
 * channels; pipelined in up and down lanes when g->slots > 1 and the lanes
 * allow it. Returns the number of steps (0 when out of memory). */
int32_t coll_double_binary_tree(coll_gen *g, int32_t rpn, int32_t C,
                                int32_t chunks, int32_t s0);

/* NCCL's two binary trees over N positions (as double_binary_tree runs
 * them): for tree t and position v, parent[t N + v] (-1 for a root),
 * depth[t N + v] (edges to the root) and height[t N + v] (edges down to its
 * deepest descendant); *H is the greatest depth of the two. The arrays hold
 * 2N entries. O(N log N). Returns 0. */
int coll_dtree(int32_t N, int32_t *parent, int32_t *depth, int32_t *height,
               int32_t *H);

/* NCCL's tree (ncclTopoPreset's tree pattern with ncclGetDtree across
 * nodes): nodes of rpn consecutive positions; inside a node a chain, local
 * 0 <- 1 <- ... <- rpn - 1 in tree 0 (head local 0) and the reverse in
 * tree 1 (head rpn - 1, so that the two trees load both directions of the
 * NVLink chain), and the heads joined across nodes by NCCL's double binary
 * tree over the nodes. One node: the chain alone. rpn < 2 or positions that
 * are not whole nodes: one rank per node, i.e. coll_dtree. Outputs as
 * coll_dtree's. Returns 0. */
int coll_tree_build(int32_t N, int32_t rpn, int32_t *parent, int32_t *depth,
                    int32_t *height, int32_t *H);

/* Depth of the deepest node of NCCL's binary tree over n ranks. */
int32_t coll_btree_depth(int32_t n);

#endif
