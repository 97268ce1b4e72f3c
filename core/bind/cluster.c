/* ps.cluster: builds the network and the per-rank device table.
 * Forms (net/net.h has the link, route and sharing model):
 *   mesh          { ranks = N, link = {bandwidth, latency} } joins every
 *                 ordered pair of ranks by its own link (the network the
 *                 closed forms assume); no link means free communication.
 *   hierarchical  { nodes, gpus_per_node, intra = {...}, inter = {...},
 *                 nics_per_node, oversubscription } -> net_build_cluster.
 *   explicit      { ranks = N, links = { {a, b, bandwidth, latency,
 *                 duplex}, ... }, switches = {names} }: a and b are ranks
 *                 (from 0) or switch names; an entry is a full-duplex cable
 *                 (two directed links, each with the bandwidth) unless
 *                 duplex = false.
 * The userdata's user value is a table of switch name -> node id. */
#include "bind/cluster.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/limit.h"
#include "base/unit.h"
#include "bind/bind.h"

/* [-0, +0] */
static int cluster_gc(lua_State *L)
{
    bind_cluster *c = luaL_checkudata(L, 1, BIND_CLUSTER_TYPE);
    net_free(c->nw);
    limit_free(c->rate);
    limit_free(c->memory);
    c->nw = NULL;
    c->rate = c->memory = NULL;
    return 0;
}

/* [-0, +0] The cluster at idx, raising "cluster was freed" once its __gc has
 * run (a script can call getmetatable(c).__gc(c) by hand: the userdata stays
 * reachable with its pointers cleared). */
static bind_cluster *live_cluster(lua_State *L, int idx)
{
    bind_cluster *c = luaL_checkudata(L, idx, BIND_CLUSTER_TYPE);
    if (!c->nw) /* the position of a Lua caller (c.ranks in a script) */
        luaL_error(L, "cluster was freed");
    return c;
}

/* [-0, +1] */
static int cluster_tostring(lua_State *L)
{
    bind_cluster *c = luaL_checkudata(L, 1, BIND_CLUSTER_TYPE);
    if (!c->nw) {
        lua_pushliteral(L, "pipesim.cluster(freed)");
        return 1;
    }
    lua_pushfstring(L, "pipesim.cluster(%d ranks)", (int)c->nranks);
    return 1;
}

/* [-0, +4] c:path(src, dst): the route's summed latency and bottleneck
 * bandwidth (net_path: 0 and inf for src == dst), then its first link's
 * bandwidth and id (nil for src == dst; the id nil for a mesh, where every
 * pair has a link of its own). Ranks from 0. For cost models in Lua, such
 * as ps.search's step-time bound: a transfer of b bytes takes at least
 * latency + b / bandwidth, and what a rank sends leaves on the first links
 * of its routes. */
static int cluster_path(lua_State *L)
{
    bind_cluster *c = live_cluster(L, 1);
    lua_Integer a = luaL_checkinteger(L, 2), b = luaL_checkinteger(L, 3);
    luaL_argcheck(L, a >= 0 && a < c->nranks, 2, "rank out of range");
    luaL_argcheck(L, b >= 0 && b < c->nranks, 3, "rank out of range");
    double lat, bw;
    net_path(c->nw, (int32_t)a, (int32_t)b, &lat, &bw);
    lua_pushnumber(L, lat);
    lua_pushnumber(L, bw);
    const int32_t *links = NULL;
    net_route_buf one;
    int32_t n =
        a == b ? 0 : net_route(c->nw, (int32_t)a, (int32_t)b, &links, &one);
    if (n <= 0) {
        lua_pushnil(L);
        lua_pushnil(L);
        return 4;
    }
    double fbw, flat;
    net_link_figures(c->nw, links[0], &fbw, &flat);
    lua_pushnumber(L, fbw);
    if (links[0] == NET_MESH_LINK)
        lua_pushnil(L);
    else
        lua_pushinteger(L, links[0]);
    return 4;
}

/* [-0, +1] */
static int cluster_index(lua_State *L)
{
    bind_cluster *c = live_cluster(L, 1);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "ranks") == 0)
        lua_pushinteger(L, c->nranks);
    else if (strcmp(k, "gpus_per_node") == 0)
        lua_pushinteger(L, c->gpus_per_node);
    else if (strcmp(k, "memory") == 0 && c->memory[0] > 0)
        lua_pushnumber(L, c->memory[0]); /* rank 0's capacity, bytes */
    else if (strcmp(k, "flops_rate") == 0 && !isnan(c->rate[0]))
        lua_pushnumber(L, c->rate[0]); /* rank 0's peak x efficiency */
    else if (strcmp(k, "flops_rates") == 0) {
        /* every rank's peak x efficiency, [r + 1] for rank r (NaN:
         * unknown), for partition = "time" */
        lua_createtable(L, c->nranks, 0);
        for (int32_t r = 0; r < c->nranks; r++) {
            lua_pushnumber(L, c->rate[r]);
            lua_rawseti(L, -2, r + 1);
        }
    } else if (strcmp(k, "nodes") == 0)
        lua_pushinteger(L, c->nodes);
    else if (strcmp(k, "nics_per_node") == 0 && c->nics_per_node > 0)
        lua_pushinteger(L, c->nics_per_node);
    else if (strcmp(k, "nvls") == 0)
        lua_pushboolean(L, c->hw.nvls);
    else if (strcmp(k, "compute_capability") == 0 && c->hw.cc > 0)
        lua_pushinteger(L, c->hw.cc);
    else if (strcmp(k, "cpu_vendor") == 0 && c->hw.cpu != COLL_CPU_UNKNOWN)
        lua_pushstring(L, c->hw.cpu == COLL_CPU_INTEL ? "intel"
                          : c->hw.cpu == COLL_CPU_AMD ? "amd"
                                                      : "arm");
    else if (strcmp(k, "nccl_channels") == 0 && c->hw.channels > 0)
        lua_pushinteger(L, c->hw.channels);
    else if (strcmp(k, "topology") == 0)
        lua_pushstring(L, c->topology);
    else if (strcmp(k, "name") == 0)
        lua_pushstring(L, c->name);
    else if (strcmp(k, "path") == 0)
        lua_pushcfunction(L, cluster_path);
    else if (strcmp(k, "sharing") == 0)
        lua_pushstring(L, net_sharing_of(c->nw) == NET_FIFO ? "fifo" : "fair");
    else if (strcmp(k, "switches") == 0) {
        /* a copy: name -> node id (link rows use node ids) */
        lua_newtable(L);
        if (lua_getiuservalue(L, 1, 1) == LUA_TTABLE) {
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                lua_pushvalue(L, -2);
                lua_insert(L, -2);
                lua_settable(L, -5);
            }
        }
        lua_pop(L, 1);
    } else
        lua_pushnil(L);
    return 1;
}

/* [-0, +0] */
bind_cluster *bind_check_cluster(lua_State *L, int idx)
{
    bind_cluster *c = luaL_testudata(L, idx, BIND_CLUSTER_TYPE);
    if (!c)
        bind_field_error(L, "cluster", BIND_CLUSTER_HINT, idx);
    return live_cluster(L, idx);
}

/* For the memory stop's message (limit_note_need), where building the
 * cluster of shape (NULL: a mesh or explicit links) ran out of memory: what
 * its per-rank device table and its network take. */
static void note_need(int32_t n, const net_cluster *shape)
{
    if (limit_stopped() != LIMIT_MEMORY || !shape)
        return;
    size_t bytes = (size_t)n * 2 * sizeof(double) + net_cluster_bytes(shape);
    char b[64], line[200];
    snprintf(line, sizeof line,
             "the cluster needs about %s (%d GPUs; it grows with GPUs, not "
             "with pairs of them)",
             limit_format_bytes(bytes, b, sizeof b), (int)n);
    limit_note_need(line);
}

/* [-0, +1] pushes the new cluster userdata; shape: the hierarchical form's,
 * for the memory stop's message */
static bind_cluster *new_cluster(lua_State *L, int32_t n,
                                 const net_cluster *shape)
{
    bind_cluster *c = lua_newuserdatauv(L, sizeof *c, 1);
    memset(c, 0, sizeof *c);
    static const luaL_Reg meta[] = {
        {"__gc", cluster_gc},
        {"__tostring", cluster_tostring},
        {"__index", cluster_index},
        {NULL, NULL},
    };
    bind_setmetatable(L, BIND_CLUSTER_TYPE, meta);
    c->nranks = n;
    c->gpus_per_node = 1;
    c->nodes = n;
    c->topology = "mesh";
    c->nw = net_new(n);
    c->rate = limit_calloc((size_t)n, sizeof *c->rate);
    c->memory = limit_calloc((size_t)n, sizeof *c->memory);
    if (!c->nw || !c->rate || !c->memory) {
        note_need(n, shape);
        luaL_error(L, "out of memory for a cluster of %d ranks", (int)n);
    }
    return c;
}

/* [-0, +1] */
bind_cluster *bind_push_ideal_cluster(lua_State *L, int32_t n)
{
    bind_cluster *c = new_cluster(L, n, NULL);
    ps_err err;
    if (net_set_mesh(c->nw, INFINITY, 0, &err) || net_finalize(c->nw, &err))
        bind_raise(L, &err);
    for (int32_t r = 0; r < n; r++)
        c->rate[r] = NAN; /* FLOP-based layers need a real device */
    c->topology = "ideal";
    snprintf(c->name, sizeof c->name, "ideal %d ranks", (int)n);
    return c;
}

/* [-0, +0] Reads a device table at idx (path names it in messages): its peak
 * *flops, *eff and *memory keep their values where the table does not set
 * them, so a per-rank override inherits every field it leaves out
 * (efficiency included). flops > 0, efficiency in (0, 1], memory >= 0. */
static void read_device(lua_State *L, int idx, const char *path, double *flops,
                        double *eff, double *memory)
{
    char name[64];
    bind_check_fields(L, idx, path, bind_fields_device);
    bind_quantity_min(L, idx, bind_join(name, sizeof name, path, "flops"),
                      UNIT_FLOP_RATE, 0, 1, flops);
    if (bind_quantity_min(L, idx,
                          bind_join(name, sizeof name, path, "efficiency"),
                          UNIT_RATIO, 0, 1, eff) &&
        !(*eff <= 1)) {
        lua_getfield(L, idx, "efficiency");
        bind_field_error(L, name, "must be in (0, 1]", -1);
    }
    bind_quantity_min(L, idx, bind_join(name, sizeof name, path, "memory"),
                      UNIT_BYTES, 0, 0, memory);
    bind_string(L, idx, bind_join(name, sizeof name, path, "name"));
}

/* [-0, +0] Raises "field 'name' must be positive, got 5 B/s" style errors. */
static void check_link_figures(lua_State *L, const char *field, double bw,
                               double lat)
{
    char num[32];
    if (!(bw > 0)) {
        snprintf(num, sizeof num, "%g", bw);
        luaL_error(L, "field '%s.bandwidth' must be positive, got %s B/s",
                   field, num);
    }
    if (!(lat >= 0)) {
        snprintf(num, sizeof num, "%g", lat);
        luaL_error(L, "field '%s.latency' must not be negative, got %s s",
                   field, num);
    }
}

/* [-0, +0] Reads {bandwidth, latency} from field `field` of the table at idx;
 * bandwidth is required. */
static void read_link(lua_State *L, int idx, const char *field, double *bw,
                      double *lat)
{
    char name[64];
    *bw = NAN;
    *lat = 0;
    if (!bind_table(L, idx, field, "{ bandwidth = ..., latency = ... }"))
        luaL_error(L,
                   "missing field '%s' (a table { bandwidth = ..., latency "
                   "= ... })",
                   field);
    int t = lua_gettop(L);
    bind_check_fields(L, t, field, bind_fields_link);
    snprintf(name, sizeof name, "%s.bandwidth", field);
    bind_quantity(L, t, name, UNIT_BANDWIDTH, bw);
    snprintf(name, sizeof name, "%s.latency", field);
    bind_quantity(L, t, name, UNIT_SECONDS, lat);
    if (isnan(*bw))
        luaL_error(L, "missing field '%s.bandwidth'", field);
    check_link_figures(L, field, *bw, *lat);
    lua_pop(L, 1);
}

/* [-0, +0] */
static int has_field(lua_State *L, int idx, const char *name)
{
    int t = lua_getfield(L, idx, name);
    lua_pop(L, 1);
    return t != LUA_TNIL;
}

/* [-0, +0] */
static void read_devices(lua_State *L, bind_cluster *c)
{
    int top = lua_gettop(L);
    double flops = NAN, eff = 1.0, memory = 0;
    if (bind_table(L, 1, "device",
                   "such as { flops = \"989 TFLOPS\", memory = \"80 GB\" } "
                   "or ps.clusters.device(\"H100\")"))
        read_device(L, lua_gettop(L), "device", &flops, &eff, &memory);
    lua_settop(L, top);
    for (int32_t r = 0; r < c->nranks; r++) {
        c->rate[r] = flops * eff;
        c->memory[r] = memory;
    }
    if (bind_table(L, 1, "devices",
                   "of rank = { flops = ..., efficiency = ... }")) {
        lua_pushnil(L);
        while (lua_next(L, top + 1)) {
            lua_Integer r = lua_tointeger(L, -2);
            if (!lua_isinteger(L, -2) || r < 0 || r >= c->nranks)
                luaL_error(L,
                           "field 'devices': key %s is not a rank of this "
                           "cluster (0..%d)",
                           bind_show(L, -2), (int)c->nranks - 1);
            char path[32];
            snprintf(path, sizeof path, "devices[%d]", (int)r);
            if (!lua_istable(L, -1))
                bind_field_error(L, path, "must be a table", -1);
            /* an override starts from `device` and changes what it sets:
             * { flops = ... } keeps the cluster's efficiency and memory */
            double f = flops, e = eff, mm = memory;
            read_device(L, lua_gettop(L), path, &f, &e, &mm);
            c->rate[r] = f * e;
            c->memory[r] = mm;
            lua_pop(L, 1);
        }
    }
    lua_settop(L, top);
}

/* [-0, +0] */
static void build_mesh(lua_State *L, bind_cluster *c)
{
    double bw = INFINITY, lat = 0;
    int top = lua_gettop(L);
    if (bind_table(L, 1, "link", "{ bandwidth = ..., latency = ... }")) {
        bind_check_fields(L, top + 1, "link", bind_fields_link);
        bind_quantity(L, top + 1, "link.bandwidth", UNIT_BANDWIDTH, &bw);
        bind_quantity(L, top + 1, "link.latency", UNIT_SECONDS, &lat);
    }
    lua_settop(L, top);
    check_link_figures(L, "link", bw, lat);
    ps_err err;
    if (net_set_mesh(c->nw, bw, lat, &err) || net_finalize(c->nw, &err))
        bind_raise(L, &err);
    if (isinf(bw))
        snprintf(c->name, sizeof c->name, "mesh %d ranks, free links",
                 (int)c->nranks);
    else
        snprintf(c->name, sizeof c->name, "mesh %d ranks %g GB/s %g us",
                 (int)c->nranks, bw / 1e9, lat * 1e6);
}

/* [-0, +0] */
static void build_hierarchical(lua_State *L, bind_cluster *c,
                               const net_cluster *nc)
{
    net_cluster k = *nc;
    read_link(L, 1, "intra", &k.intra_bw, &k.intra_lat);
    read_link(L, 1, "inter", &k.inter_bw, &k.inter_lat);
    ps_err err;
    if (net_build_cluster(c->nw, &k, &err)) {
        note_need(c->nranks, &k);
        bind_raise(L, &err);
    }
    c->gpus_per_node = k.gpus_per_node;
    c->nodes = k.nodes;
    c->nics_per_node = k.nics_per_node ? k.nics_per_node : k.gpus_per_node;
    c->topology = "hierarchical";
    snprintf(c->name, sizeof c->name, "%d nodes x %d gpus", (int)k.nodes,
             (int)k.gpus_per_node);
}

/* [-0, +0] One endpoint of links[i] (the value at the top): a rank number or a
 * switch name; names are looked up in (and, without a `switches` list,
 * added to) the table at names. */
static int32_t endpoint(lua_State *L, bind_cluster *c, int i, int names,
                        int declared)
{
    if (lua_type(L, -1) == LUA_TSTRING) {
        lua_pushvalue(L, -1);
        if (lua_gettable(L, names) == LUA_TNUMBER) {
            int32_t id = (int32_t)lua_tointeger(L, -1);
            lua_pop(L, 1);
            return id;
        }
        lua_pop(L, 1);
        if (declared)
            luaL_error(L,
                       "field 'links[%d]': unknown node '%s' (not a rank "
                       "and not in 'switches')",
                       i, lua_tostring(L, -1));
        int32_t id = net_add_switch(c->nw);
        lua_pushvalue(L, -1);
        lua_pushinteger(L, id);
        lua_settable(L, names);
        return id;
    }
    int ok;
    lua_Integer r = lua_tointegerx(L, -1, &ok);
    if (!ok)
        luaL_error(L,
                   "field 'links[%d]': an endpoint must be a rank number or "
                   "a switch name, got %s",
                   i, luaL_tolstring(L, -1, NULL));
    if (r < 0 || r >= c->nranks)
        luaL_error(L,
                   "field 'links[%d]': rank %I is not in the cluster (ranks "
                   "0..%d)",
                   i, r, (int)c->nranks - 1);
    return (int32_t)r;
}

/* [-0, +0] */
static void build_explicit(lua_State *L, bind_cluster *c, int ud)
{
    int top = lua_gettop(L);
    lua_newtable(L); /* switch name -> node id */
    int names = lua_gettop(L);
    int declared = 0;
    ps_err err;
    if (bind_table(L, 1, "switches", "of names")) {
        declared = 1;
        lua_Integer n = bind_list_len(L, -1, "switches");
        for (lua_Integer i = 1; i <= n; i++) {
            if (lua_geti(L, -1, i) != LUA_TSTRING)
                bind_field_error(L, lua_pushfstring(L, "switches[%d]", (int)i),
                                 "must be a name", -2);
            lua_pushvalue(L, -1);
            if (lua_gettable(L, names) != LUA_TNIL)
                luaL_error(L, "field 'switches': '%s' is listed twice",
                           lua_tostring(L, -2));
            lua_pop(L, 1);
            lua_pushinteger(L, net_add_switch(c->nw));
            lua_settable(L, names);
        }
        lua_pop(L, 1);
    }
    if (!bind_table(L, 1, "links",
                    "of links { a, b, bandwidth = ..., latency = ... }"))
        luaL_error(L, "missing field 'links'");
    int links = lua_gettop(L);
    lua_Integer nl = bind_list_len(L, links, "links");
    if (nl < 1)
        luaL_error(L, "field 'links' is empty");
    for (lua_Integer i = 1; i <= nl; i++) {
        char field[48];
        snprintf(field, sizeof field, "links[%d]", (int)i);
        if (lua_geti(L, links, i) != LUA_TTABLE)
            bind_field_error(L, field,
                             "must be a table { a, b, bandwidth = ..., "
                             "latency = ... }",
                             -1);
        int e = lua_gettop(L);
        bind_check_fields(L, e, field, bind_fields_links_entry);
        lua_geti(L, e, 1);
        int32_t a = endpoint(L, c, (int)i, names, declared);
        lua_geti(L, e, 2);
        int32_t b = endpoint(L, c, (int)i, names, declared);
        lua_settop(L, e);
        if (a == b)
            luaL_error(L, "field '%s': a link from a node to itself", field);
        double bw = NAN, lat = 0;
        int duplex = 1;
        char name[64];
        snprintf(name, sizeof name, "%s.bandwidth", field);
        bind_quantity(L, e, name, UNIT_BANDWIDTH, &bw);
        snprintf(name, sizeof name, "%s.latency", field);
        bind_quantity(L, e, name, UNIT_SECONDS, &lat);
        snprintf(name, sizeof name, "%s.duplex", field);
        bind_boolean(L, e, name, &duplex);
        if (isnan(bw))
            luaL_error(L, "missing field '%s.bandwidth'", field);
        check_link_figures(L, field, bw, lat);
        if (net_add_link(c->nw, a, b, bw, lat, &err) ||
            (duplex && net_add_link(c->nw, b, a, bw, lat, &err)))
            luaL_error(L, "field '%s': %s", field, err.msg);
        lua_settop(L, e - 1);
    }
    if (net_finalize(c->nw, &err))
        bind_raise(L, &err);
    c->topology = "explicit";
    snprintf(c->name, sizeof c->name, "explicit %d ranks %d links",
             (int)c->nranks, (int)nl);
    lua_pushvalue(L, names);
    lua_setiuservalue(L, ud, 1);
    lua_settop(L, top);
}

/* [-0, +0] Rejects fields of one form used with another. */
static void check_form(lua_State *L, const char *form, const char *const *bad)
{
    for (; *bad; bad++)
        if (has_field(L, 1, *bad))
            luaL_error(L, "field '%s' does not apply to the %s form", *bad,
                       form);
}

/* CUDA compute capabilities NCCL 2.30 builds for (x 10 + minor): a value
 * outside the list is a typo, not a new GPU. */
static const int known_cc[] = {60, 61, 62,  70,  72,  75,  80,  86, 87,
                               89, 90, 100, 101, 103, 110, 120, 121};

/* [-0, +0] The fields NCCL's tuner reads (coll_hw, coll/coll.h;
 * core/coll/proto.c uses them): compute_capability, cpu_vendor ("intel", "amd",
 * "arm", any case) and nccl_channels. A misspelled or unknown value is one line
 * naming the field and the value. */
static void read_nccl_hw(lua_State *L, bind_cluster *c)
{
    long long cc = 0, ch = 0;
    if (lua_getfield(L, 1, "compute_capability") != LUA_TNIL &&
        !lua_isinteger(L, -1))
        bind_field_error(L, "compute_capability",
                         "must be an integer such as 80 (A100) or 90 (H100)",
                         -1);
    lua_pop(L, 1);
    if (bind_int(L, 1, "compute_capability", 0, 1000, &cc)) {
        size_t i, n = sizeof known_cc / sizeof known_cc[0];
        for (i = 0; i < n && known_cc[i] != cc; i++)
            ;
        if (i == n)
            luaL_error(L,
                       "field 'compute_capability': unknown compute "
                       "capability %d (known: 60 .. 62, 70, 72, 75, 80, 86, "
                       "87, 89, 90, 100, 101, 103, 110, 120, 121)",
                       (int)cc);
        c->hw.cc = (int)cc;
    }
    const char *cpu = bind_string(L, 1, "cpu_vendor");
    static const char *const cpus[] = {"intel", "amd", "arm", NULL};
    if (cpu) {
        int k;
        for (k = 0; cpus[k] && strcasecmp(cpus[k], cpu) != 0; k++)
            ;
        if (!cpus[k])
            luaL_error(L,
                       "field 'cpu_vendor': unknown CPU vendor '%s' "
                       "(expected intel, amd or arm)",
                       cpu);
        c->hw.cpu = COLL_CPU_INTEL + k;
    }
    if (bind_int(L, 1, "nccl_channels", 1, 64, &ch))
        c->hw.channels = (int32_t)ch;
}

/* The largest cluster: net/net.h's limit on ranks. */
#define MAX_RANKS (1 << 20)

/* [-0, +1] ps.cluster(spec) -> the cluster userdata */
static int core_cluster(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    bind_check_fields(L, 1, "", bind_fields_cluster);
    int hier = has_field(L, 1, "nodes") || has_field(L, 1, "gpus_per_node");
    int expl = has_field(L, 1, "links");
    static const char *const not_mesh[] = {
        "intra",    "inter", "nics_per_node", "oversubscription",
        "switches", "nodes", "nvls",          NULL};
    static const char *const not_hier[] = {"link", "links", "switches", NULL};
    static const char *const not_expl[] = {
        "link", "intra", "inter", "nics_per_node", "oversubscription",
        "nvls", NULL};
    if (hier)
        check_form(L, "hierarchical (nodes x gpus_per_node)", not_hier);
    else if (expl)
        check_form(L, "explicit (links)", not_expl);
    else
        check_form(L, "mesh (ranks and link)", not_mesh);

    long long n = 0;
    net_cluster nc = {0};
    int has_ranks = bind_int(L, 1, "ranks", 1, MAX_RANKS, &n);
    if (hier) {
        long long nodes = 0, g = 0, nics = 0;
        if (!bind_int(L, 1, "nodes", 1, MAX_RANKS, &nodes))
            return luaL_error(L, "missing field 'nodes' (with gpus_per_node)");
        if (!bind_int(L, 1, "gpus_per_node", 1, MAX_RANKS, &g))
            return luaL_error(L, "missing field 'gpus_per_node' (with nodes)");
        /* both are at most 2^20: the product fits in 64 bits */
        if (nodes * g > MAX_RANKS)
            return luaL_error(L,
                              "nodes %I x gpus_per_node %I is %I ranks, more "
                              "than the limit of %d",
                              (lua_Integer)nodes, (lua_Integer)g,
                              (lua_Integer)(nodes * g), MAX_RANKS);
        bind_int(L, 1, "nics_per_node", 1, g, &nics);
        if (bind_quantity_min(L, 1, "oversubscription", UNIT_RATIO, 1, 0,
                              &nc.oversubscription) &&
            !(nc.oversubscription >= 1))
            return luaL_error(L, "field 'oversubscription' must be >= 1");
        if (has_ranks && n != nodes * g)
            return luaL_error(L,
                              "field 'ranks' is %d but nodes x gpus_per_node "
                              "is %d",
                              (int)n, (int)(nodes * g));
        nc.nodes = (int32_t)nodes;
        nc.gpus_per_node = (int32_t)g;
        nc.nics_per_node = (int32_t)nics;
        n = nodes * g;
    } else if (!has_ranks) {
        return luaL_error(L, "missing field 'ranks' (the number of GPUs)");
    }
    bind_cluster *c = new_cluster(L, (int32_t)n, hier ? &nc : NULL);
    int ud = lua_gettop(L);
    read_devices(L, c);
    if (hier)
        build_hierarchical(L, c, &nc);
    else if (expl)
        build_explicit(L, c, ud);
    else
        build_mesh(L, c);

    const char *sharing = bind_string(L, 1, "sharing");
    if (sharing && strcmp(sharing, "fifo") == 0)
        net_set_sharing(c->nw, NET_FIFO);
    else if (sharing && strcmp(sharing, "fair") == 0)
        net_set_sharing(c->nw, NET_FAIR);
    else if (sharing)
        return luaL_error(L,
                          "field 'sharing': unknown model '%s' (expected "
                          "fifo or fair)",
                          sharing);
    const char *name = bind_string(L, 1, "name");
    if (name)
        snprintf(c->name, sizeof c->name, "%s", name);
    /* NVLink SHARP in the node switches (NVSwitch 3, DGX H100/H200): the
     * nvls allreduce (coll/coll.h) */
    bind_boolean(L, 1, "nvls", &c->hw.nvls);
    read_nccl_hw(L, c);
    lua_settop(L, ud);
    return 1;
}

const luaL_Reg bind_cluster_funcs[] = {
    {"cluster", core_cluster},
    {NULL, NULL},
};
