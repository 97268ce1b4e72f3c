/* The cluster userdata shared by the binding areas that run on a cluster. */
#ifndef PS_BIND_CLUSTER_H
#define PS_BIND_CLUSTER_H

#include <lua.h>
#include <stdint.h>

#include "coll/coll.h"
#include "net/net.h"

#define BIND_CLUSTER_TYPE "pipesim.cluster"

typedef struct bind_cluster {
    net *nw;
    int32_t nranks;
    int32_t gpus_per_node; /* ranks per node (1 for a mesh or explicit links) */
    double *rate;          /* per rank: peak FLOP/s * efficiency */
    double *memory;        /* per rank capacity in bytes, 0 = unknown */
    int32_t nodes;         /* nranks / gpus_per_node */
    int32_t nics_per_node; /* hierarchical form, else 0 */
    coll_hw hw;            /* NCCL hardware: nvls, compute capability ... */
    const char *topology;  /* "mesh", "hierarchical", "explicit", "ideal" */
    char name[128];        /* label for params JSON and queries */
} bind_cluster;

/* What a cluster field must be, for messages. */
#define BIND_CLUSTER_HINT                                                      \
    "must be a cluster made by ps.cluster{...} (e.g. "                         \
    "ps.cluster(ps.clusters.dgx(\"H100\", 2)))"

/* The cluster at idx; raises "field 'cluster' must be a cluster made by
 * ps.cluster{...} ..., got <value>" otherwise, and "cluster was freed"
 * when its __gc has already run. */
bind_cluster *bind_check_cluster(lua_State *L, int idx);

/* Pushes an ideal cluster of n ranks (free communication, unknown device)
 * for runs that give measured times and no cluster. */
bind_cluster *bind_push_ideal_cluster(lua_State *L, int32_t n);

#endif
