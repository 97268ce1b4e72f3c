/* ps.cluster: builds the network and the per-rank device table.
 * Forms: { ranks = N, device = {...}, link = {...} } joins every ordered
 * pair of ranks by its own link (the network the closed forms assume); no
 * link means free communication. */
#include "bind_cluster.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"
#include "unit.h"

static int cluster_gc(lua_State *L)
{
    bind_cluster *c = luaL_checkudata(L, 1, BIND_CLUSTER_TYPE);
    net_free(c->nw);
    free(c->rate);
    free(c->memory);
    c->nw = NULL;
    c->rate = c->memory = NULL;
    return 0;
}

static int cluster_tostring(lua_State *L)
{
    bind_cluster *c = luaL_checkudata(L, 1, BIND_CLUSTER_TYPE);
    lua_pushfstring(L, "pipesim.cluster(%d ranks)", (int)c->nranks);
    return 1;
}

static int cluster_index(lua_State *L)
{
    bind_cluster *c = luaL_checkudata(L, 1, BIND_CLUSTER_TYPE);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "ranks") == 0)
        lua_pushinteger(L, c->nranks);
    else if (strcmp(k, "gpus_per_node") == 0)
        lua_pushinteger(L, c->gpus_per_node);
    else if (strcmp(k, "memory") == 0 && c->memory[0] > 0)
        lua_pushnumber(L, c->memory[0]); /* rank 0's capacity, bytes */
    else if (strcmp(k, "flops_rate") == 0 && !isnan(c->rate[0]))
        lua_pushnumber(L, c->rate[0]); /* rank 0's peak x efficiency */
    else
        lua_pushnil(L);
    return 1;
}

bind_cluster *bind_check_cluster(lua_State *L, int idx)
{
    return luaL_checkudata(L, idx, BIND_CLUSTER_TYPE);
}

static bind_cluster *new_cluster(lua_State *L, int32_t n)
{
    bind_cluster *c = lua_newuserdatauv(L, sizeof *c, 0);
    memset(c, 0, sizeof *c);
    luaL_setmetatable(L, BIND_CLUSTER_TYPE);
    c->nranks = n;
    c->gpus_per_node = 1;
    c->nw = net_new(n);
    c->rate = calloc((size_t)n, sizeof *c->rate);
    c->memory = calloc((size_t)n, sizeof *c->memory);
    if (!c->nw || !c->rate || !c->memory)
        luaL_error(L, "out of memory for a cluster of %d ranks", (int)n);
    return c;
}

bind_cluster *bind_push_ideal_cluster(lua_State *L, int32_t n)
{
    bind_cluster *c = new_cluster(L, n);
    ps_err err;
    if (net_set_mesh(c->nw, INFINITY, 0, &err) || net_finalize(c->nw, &err))
        bind_raise(L, &err);
    for (int32_t r = 0; r < n; r++)
        c->rate[r] = NAN; /* FLOP-based layers need a real device */
    return c;
}

/* Reads a device table at idx into *rate and *memory. */
static void read_device(lua_State *L, int idx, double *rate, double *memory)
{
    double flops = NAN, eff = 1.0, mem = 0;
    bind_quantity(L, idx, "flops", UNIT_FLOP_RATE, &flops);
    bind_quantity(L, idx, "efficiency", UNIT_FLOP, &eff);
    bind_quantity(L, idx, "memory", UNIT_BYTES, &mem);
    if (!isnan(flops) && !(flops > 0))
        luaL_error(L, "field 'flops' must be positive, got %f", flops);
    if (!(eff > 0 && eff <= 1))
        luaL_error(L, "field 'efficiency' must be in (0, 1], got %f", eff);
    if (mem < 0)
        luaL_error(L, "field 'memory' must not be negative");
    *rate = flops * eff;
    *memory = mem;
}

static int core_cluster(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    long long n = 0;
    bind_integer(L, 1, "ranks", &n);
    if (n < 1)
        return luaL_error(L, "field 'ranks' must be an integer >= 1, got %d",
                          (int)n);
    if (n > 1 << 20)
        return luaL_error(L, "field 'ranks' is too large (%d)", (int)n);
    bind_cluster *c = new_cluster(L, (int32_t)n);
    int top = lua_gettop(L);

    double rate = NAN, memory = 0;
    if (lua_getfield(L, 1, "device") == LUA_TTABLE)
        read_device(L, lua_gettop(L), &rate, &memory);
    else if (!lua_isnil(L, -1))
        return luaL_error(L, "field 'device' must be a table");
    lua_settop(L, top);
    for (int32_t r = 0; r < c->nranks; r++) {
        c->rate[r] = rate;
        c->memory[r] = memory;
    }
    if (lua_getfield(L, 1, "devices") == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, top + 1)) {
            int ok;
            lua_Integer r = lua_tointegerx(L, -2, &ok);
            if (!ok || r < 0 || r >= c->nranks)
                return luaL_error(L,
                                  "field 'devices': key %s is not a rank "
                                  "of this cluster (0..%d)",
                                  luaL_tolstring(L, -2, NULL),
                                  (int)c->nranks - 1);
            if (!lua_istable(L, -1))
                return luaL_error(L, "field 'devices[%d]' must be a table",
                                  (int)r);
            double rr = c->rate[r] / 1.0, mm = c->memory[r];
            /* an override inherits what it does not set */
            double f = NAN, e = 1.0;
            bind_quantity(L, lua_gettop(L), "flops", UNIT_FLOP_RATE, &f);
            bind_quantity(L, lua_gettop(L), "efficiency", UNIT_FLOP, &e);
            bind_quantity(L, lua_gettop(L), "memory", UNIT_BYTES, &mm);
            if (!isnan(f)) {
                if (!(f > 0) || !(e > 0 && e <= 1))
                    return luaL_error(L,
                                      "devices[%d]: flops must be positive "
                                      "and efficiency in (0, 1]",
                                      (int)r);
                rr = f * e;
            }
            c->rate[r] = rr;
            c->memory[r] = mm;
            lua_pop(L, 1);
        }
    } else if (!lua_isnil(L, -1)) {
        return luaL_error(L, "field 'devices' must be a table");
    }
    lua_settop(L, top);

    double bw = INFINITY, lat = 0;
    if (lua_getfield(L, 1, "link") == LUA_TTABLE) {
        bind_quantity(L, top + 1, "link.bandwidth", UNIT_BANDWIDTH, &bw);
        bind_quantity(L, top + 1, "link.latency", UNIT_SECONDS, &lat);
    } else if (!lua_isnil(L, -1)) {
        return luaL_error(L, "field 'link' must be a table");
    }
    lua_settop(L, top);
    char num[32];
    if (!(bw > 0)) {
        snprintf(num, sizeof num, "%g", bw);
        return luaL_error(L,
                          "field 'link.bandwidth' must be positive, got %s "
                          "B/s",
                          num);
    }
    if (!(lat >= 0)) {
        snprintf(num, sizeof num, "%g", lat);
        return luaL_error(L,
                          "field 'link.latency' must not be negative, got "
                          "%s s",
                          num);
    }
    ps_err err;
    if (net_set_mesh(c->nw, bw, lat, &err) || net_finalize(c->nw, &err))
        return bind_raise(L, &err);
    return 1;
}

void bind_register_cluster(lua_State *L)
{
    if (luaL_newmetatable(L, BIND_CLUSTER_TYPE)) {
        static const luaL_Reg meta[] = {
            {"__gc", cluster_gc},
            {"__tostring", cluster_tostring},
            {"__index", cluster_index},
            {NULL, NULL},
        };
        luaL_setfuncs(L, meta, 0);
    }
    lua_pop(L, 1);
    lua_pushcfunction(L, core_cluster);
    lua_setfield(L, -2, "cluster");
}
