/* The `faults` list and `recv_timeout` of ps.run and ps.collective, read
 * into a fault plan (sim/fault.h checks ranges and duplicates) with the shared
 * checking vocabulary (bind/bind.h). Shared by bind/run.c and
 * bind/collective.c; the plan and its arrays are one userdata on the Lua stack,
 * so an error raised half way leaks nothing. */
#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "base/unit.h"
#include "bind/bind.h"
#include "sim/fault.h"

/* [-0, +0] A time field of the fault at idx (path "faults[i]"): "at 2 ms", "2
 * ms" or seconds; *t keeps its value when the field is nil. Returns 1 when the
 * field is set. */
static int read_time(lua_State *L, int idx, const char *path, const char *key,
                     double *t)
{
    char name[64];
    bind_join(name, sizeof name, path, key);
    int type = lua_getfield(L, idx, key);
    if (type == LUA_TNUMBER) {
        *t = lua_tonumber(L, -1);
    } else if (type == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        ps_err err;
        if (fault_parse_time(s, len, t, &err))
            luaL_error(L, "field '%s': %s", name, err.msg);
    } else if (type != LUA_TNIL) {
        bind_field_error(L, name, "must be a time such as \"at 2 ms\"", -1);
    }
    lua_pop(L, 1);
    return type != LUA_TNIL;
}

/* [-1, +0] The rank at the top of the stack, checked in 64 bits, popped. */
static int32_t pop_rank(lua_State *L, const char *name, int32_t nranks)
{
    long long r;
    bind_check_int(L, -1, name, 0, (long long)nranks - 1, &r);
    lua_pop(L, 1);
    return (int32_t)r;
}

/* [-0, +0] */
static int has(lua_State *L, int idx, const char *key)
{
    int set = lua_getfield(L, idx, key) != LUA_TNIL;
    lua_pop(L, 1);
    return set;
}

/* [-0, +0] */
static void read_fault(lua_State *L, int idx, int i, int32_t nranks,
                       int compute, fault *f)
{
    char path[32], name[64];
    snprintf(path, sizeof path, "faults[%d]", i);
    if (!lua_istable(L, idx))
        bind_field_error(L, path,
                         "must be a table such as { rank = 3, stall = \"at 2 "
                         "ms\" }",
                         idx);
    bind_check_fields(L, idx, path, bind_fields_fault);
    memset(f, 0, sizeof *f);
    int stall = has(L, idx, "stall"), slow = has(L, idx, "slow");
    int down = has(L, idx, "down");
    if (stall + slow + down == 0)
        luaL_error(L, "%s: missing field 'stall', 'slow' or 'down'", path);
    if (stall + slow + down > 1)
        luaL_error(L, "%s: give one of 'stall', 'slow' and 'down' per entry",
                   path);
    f->kind = stall ? FAULT_STALL : slow ? FAULT_SLOW : FAULT_DOWN;
    const char *kind = stall ? "stall" : slow ? "slow" : "down";
    if (f->kind == FAULT_DOWN) {
        if (has(L, idx, "rank"))
            luaL_error(L,
                       "%s: field 'rank' does not go with 'down' (a link is "
                       "link = {a, b})",
                       path);
        bind_join(name, sizeof name, path, "link");
        if (lua_getfield(L, idx, "link") == LUA_TNIL)
            luaL_error(L, "%s: missing field 'link'", path);
        if (!lua_istable(L, -1) || bind_list_len(L, -1, name) != 2)
            bind_field_error(L, name, "must be a pair of ranks such as {2, 3}",
                             -1);
        lua_geti(L, -1, 1);
        f->rank = pop_rank(L, name, nranks);
        lua_geti(L, -1, 2);
        f->peer = pop_rank(L, name, nranks);
        lua_pop(L, 1);
        read_time(L, idx, path, "down", &f->t);
    } else {
        if (has(L, idx, "link"))
            luaL_error(L, "%s: field 'link' goes with 'down', not '%s'", path,
                       kind);
        if (lua_getfield(L, idx, "rank") == LUA_TNIL)
            luaL_error(L, "%s: missing field 'rank'", path);
        f->rank =
            pop_rank(L, bind_join(name, sizeof name, path, "rank"), nranks);
        if (stall) {
            read_time(L, idx, path, "stall", &f->t);
        } else {
            if (!compute)
                luaL_error(L,
                           "%s: 'slow' does not apply to a collective (it has "
                           "no compute ops)",
                           path);
            bind_join(name, sizeof name, path, "slow");
            lua_getfield(L, idx, "slow");
            if (lua_type(L, -1) != LUA_TNUMBER)
                bind_field_error(L, name,
                                 "must be a number in (0, 1] (the rank's "
                                 "share of full speed)",
                                 -1);
            f->speed = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
    }
    double from = 0;
    if (read_time(L, idx, path, "from", &from) && f->kind != FAULT_SLOW)
        luaL_error(L, "%s: field 'from' goes with 'slow', not '%s'", path,
                   kind);
    if (f->kind == FAULT_SLOW)
        f->t = from;
}

/* [-0, +1] pushes the userdata that owns the plan, or nil (bind/bind.h) */
const fault_plan *bind_faults(lua_State *L, int idx, int32_t nranks,
                              int compute)
{
    idx = lua_absindex(L, idx);
    double timeout = INFINITY;
    bind_quantity_min(L, idx, "recv_timeout", UNIT_SECONDS, 0, 1, &timeout);
    int type = lua_getfield(L, idx, "faults");
    if (type != LUA_TNIL && type != LUA_TTABLE)
        bind_field_error(L, "faults",
                         "must be a list of faults such as { { rank = 3, "
                         "stall = \"at 2 ms\" } }",
                         -1);
    if (type == LUA_TNIL && isinf(timeout))
        return NULL; /* leaves the nil */
    int list = lua_gettop(L);
    lua_Integer n = lua_istable(L, list) ? bind_list_len(L, list, "faults") : 0;
    if (n > 1 << 20)
        luaL_error(L, "field 'faults' is too long (%d entries)", (int)n);
    /* one block: the plan, its list and its per-rank table */
    size_t size = sizeof(fault_plan) + (size_t)n * sizeof(fault) +
                  (size_t)nranks * sizeof(fault_rank);
    fault_plan *fp = lua_newuserdatauv(L, size, 0);
    fault *faults = (fault *)(fp + 1);
    fault_rank *ranks = (fault_rank *)(faults + n);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, list, i);
        read_fault(L, lua_gettop(L), (int)i, nranks, compute, &faults[i - 1]);
        lua_pop(L, 1);
    }
    ps_err err;
    if (fault_plan_init(fp, faults, (int32_t)n, timeout, ranks, nranks, &err))
        bind_raise(L, &err);
    lua_remove(L, list); /* leaves the plan */
    return fp;
}
