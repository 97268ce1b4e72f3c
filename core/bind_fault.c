/* The `faults` list and `recv_timeout` of ps.run and ps.collective, read
 * into a fault plan (fault.h checks ranges and ranks). Shared by
 * bind_run.c and bind_collective.c; the plan and its arrays are userdata
 * on the Lua stack, so an error raised half way leaks nothing. */
#include <lauxlib.h>
#include <string.h>

#include "bind.h"
#include "fault.h"
#include "unit.h"

static const char *const FIELDS[] = {"rank", "stall", "slow", "from",
                                     "link", "down",  NULL};

/* A time field of faults[i]: "at 2 ms", "2 ms" or seconds; *t keeps its
 * value when the field is nil. Returns 1 when the field is set. */
static int read_time(lua_State *L, int idx, int i, const char *name, double *t)
{
    int type = lua_getfield(L, idx, name);
    if (type == LUA_TNUMBER) {
        *t = lua_tonumber(L, -1);
    } else if (type == LUA_TSTRING) {
        ps_err err;
        if (fault_parse_time(lua_tostring(L, -1), t, &err))
            luaL_error(L, "faults[%d]: field '%s': %s", i, name, err.msg);
    } else if (type != LUA_TNIL) {
        luaL_error(L,
                   "faults[%d]: field '%s' must be a time such as \"at 2 "
                   "ms\", got a %s",
                   i, name, luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    return type != LUA_TNIL;
}

/* An integer rank: the value at the top of the stack, popped. */
static int32_t pop_rank(lua_State *L, int i, const char *name)
{
    int ok;
    lua_Integer r = lua_tointegerx(L, -1, &ok);
    if (!ok || r < INT32_MIN || r > INT32_MAX)
        luaL_error(L, "faults[%d]: field '%s' must be a rank number, got %s", i,
                   name, luaL_tolstring(L, -1, NULL));
    lua_pop(L, 1);
    return (int32_t)r;
}

/* Rejects any key of faults[i] that is not a fault field. */
static void check_keys(lua_State *L, int idx, int i)
{
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        const char *k =
            lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        int known = 0;
        for (int f = 0; k && FIELDS[f] && !known; f++)
            known = strcmp(k, FIELDS[f]) == 0;
        if (!known)
            luaL_error(L,
                       "faults[%d]: unknown field '%s' (expected rank with "
                       "stall, or rank with slow and from, or link with "
                       "down)",
                       i, luaL_tolstring(L, -1, NULL));
    }
}

static void read_fault(lua_State *L, int idx, int i, int compute, fault *f)
{
    if (!lua_istable(L, idx))
        luaL_error(L,
                   "faults[%d] must be a table such as { rank = 3, stall = "
                   "\"at 2 ms\" }, got a %s",
                   i, luaL_typename(L, idx));
    check_keys(L, idx, i);
    memset(f, 0, sizeof *f);
    int stall = lua_getfield(L, idx, "stall") != LUA_TNIL;
    int slow = lua_getfield(L, idx, "slow") != LUA_TNIL;
    int down = lua_getfield(L, idx, "down") != LUA_TNIL;
    lua_pop(L, 3);
    if (stall + slow + down != 1)
        luaL_error(L,
                   stall + slow + down == 0
                       ? "faults[%d]: missing field 'stall', 'slow' or 'down'"
                       : "faults[%d]: give one of 'stall', 'slow' and 'down' "
                         "per entry",
                   i);
    f->kind = stall ? FAULT_STALL : slow ? FAULT_SLOW : FAULT_DOWN;
    int has_rank = lua_getfield(L, idx, "rank") != LUA_TNIL;
    int has_link = lua_getfield(L, idx, "link") != LUA_TNIL;
    lua_pop(L, 2);
    if (f->kind == FAULT_DOWN) {
        if (has_rank)
            luaL_error(L,
                       "faults[%d]: field 'rank' does not go with 'down' "
                       "(a link is link = {a, b})",
                       i);
        if (lua_getfield(L, idx, "link") != LUA_TTABLE || luaL_len(L, -1) != 2)
            luaL_error(L,
                       "faults[%d]: field 'link' must be a pair of ranks "
                       "such as {2, 3}",
                       i);
        lua_geti(L, -1, 1);
        f->rank = pop_rank(L, i, "link");
        lua_geti(L, -1, 2);
        f->peer = pop_rank(L, i, "link");
        lua_pop(L, 1);
        read_time(L, idx, i, "down", &f->t);
    } else {
        if (has_link)
            luaL_error(L, "faults[%d]: field 'link' goes with 'down', not '%s'",
                       i, stall ? "stall" : "slow");
        if (!has_rank)
            luaL_error(L, "faults[%d]: missing field 'rank'", i);
        lua_getfield(L, idx, "rank");
        f->rank = pop_rank(L, i, "rank");
        if (stall) {
            read_time(L, idx, i, "stall", &f->t);
        } else {
            if (!compute)
                luaL_error(L,
                           "faults[%d]: field 'slow': a collective has no "
                           "compute ops to slow down",
                           i);
            lua_getfield(L, idx, "slow");
            int ok;
            f->speed = lua_tonumberx(L, -1, &ok);
            if (!ok || lua_type(L, -1) != LUA_TNUMBER)
                luaL_error(L,
                           "faults[%d]: field 'slow' must be a number in (0, "
                           "1] (the rank's share of full speed), got %s",
                           i, luaL_tolstring(L, -1, NULL));
            lua_pop(L, 1);
        }
    }
    double from = 0;
    if (read_time(L, idx, i, "from", &from) && f->kind != FAULT_SLOW)
        luaL_error(L, "faults[%d]: field 'from' goes with 'slow', not '%s'", i,
                   stall ? "stall" : "down");
    if (f->kind == FAULT_SLOW)
        f->t = from;
}

const fault_plan *bind_faults(lua_State *L, int idx, int32_t nranks,
                              int compute)
{
    double timeout = INFINITY;
    int given = lua_getfield(L, idx, "recv_timeout") != LUA_TNIL;
    lua_pop(L, 1);
    if (given) {
        timeout = 0;
        bind_quantity(L, idx, "recv_timeout", UNIT_SECONDS, &timeout);
    }
    int type = lua_getfield(L, idx, "faults");
    if (type != LUA_TNIL && type != LUA_TTABLE)
        luaL_error(L,
                   "field 'faults' must be a list of faults such as { { "
                   "rank = 3, stall = \"at 2 ms\" } }, got a %s",
                   luaL_typename(L, -1));
    if (type == LUA_TNIL && !given) {
        lua_pop(L, 1);
        lua_pushnil(L);
        return NULL;
    }
    int list = lua_gettop(L);
    lua_Integer n = type == LUA_TTABLE ? luaL_len(L, list) : 0;
    if (n > 1 << 20)
        luaL_error(L, "field 'faults' is too long (%d entries)", (int)n);
    /* one block: the plan, its list and its per-rank table */
    size_t size = sizeof(fault_plan) + (size_t)n * sizeof(fault) +
                  (size_t)nranks * sizeof(fault_rank);
    fault_plan *fp = lua_newuserdatauv(L, size, 0);
    fault *faults = (fault *)(fp + 1);
    fault_rank *ranks = (fault_rank *)(faults + n);
    if (type == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, list)) {
            lua_pop(L, 1);
            if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 ||
                lua_tointeger(L, -1) > n)
                luaL_error(L,
                           "field 'faults' must be a list (1..%d), not a "
                           "table with key %s",
                           (int)n, luaL_tolstring(L, -1, NULL));
        }
    }
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, list, i);
        read_fault(L, lua_gettop(L), (int)i, compute, &faults[i - 1]);
        lua_pop(L, 1);
    }
    ps_err err;
    if (fault_plan_init(fp, faults, (int32_t)n, timeout, ranks, nranks, &err))
        bind_raise(L, &err);
    lua_remove(L, list); /* leaves the plan */
    return fp;
}
