/* Binding infrastructure: the session's Lua side (its registry entry,
 * -D arguments, the scenario's version, the end of the scenario), the
 * checks of a database path before the run layer opens it (run/session.c
 * holds the databases, counts and progress line), registry contexts. */
#include "bind/bind.h"

#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/limit.h"
#include "base/unit.h"
#include "rec/rec.h"
#include "run/session.h"

#define SESSION_KEY "pipesim.session"
#define SESSION_TYPE "pipesim.session_type" /* its metatable */

typedef struct session {
    bind_session s;
    run_session *run; /* databases, counts, progress line */
    int64_t
        total; /* runs in the default database at bind_finish, -1: unknown */
    int ended; /* bind_finish has begun: the scenario has returned */
    bind_database_hook db_hook; /* a sweep worker's databases, or NULL */
} session;

/* [-0, +0] */
void *bind_registry_ptr(lua_State *L, const char *key)
{
    lua_getfield(L, LUA_REGISTRYINDEX, key);
    void *p = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return p;
}

/* [-0, +0] */
static session *get_session(lua_State *L)
{
    return bind_registry_ptr(L, SESSION_KEY);
}

/* [-0, +0] raises once the scenario has ended (bind_finish): what a
 * __gc metamethod calls at exit, when the databases are closed and new
 * objects get no finalizer (lua_close), neither records nor leaks */
void bind_check_open(lua_State *L)
{
    session *s = get_session(L);
    if (s && (s->ended || !s->run))
        luaL_error(L, "the scenario has ended: pipesim cannot run, record or "
                      "show anything from a __gc metamethod at exit (do it "
                      "before the scenario returns)");
}

/* [-0, +0] */
void bind_session_end(lua_State *L)
{
    session *s = get_session(L);
    if (s)
        s->ended = 1;
}

/* [-0, +0] raises */
int bind_raise(lua_State *L, const ps_err *err)
{
    if (limit_stopped())
        return bind_raise_stop(L);
    lua_pushstring(L, err->msg);
    return lua_error(L);
}

/* [-0, +0] */
struct rec_db *bind_database(lua_State *L, const char *path)
{
    session *s = get_session(L);
    bind_check_open(L);
    /* SQLite's temporary and in-memory databases would return ids of
     * runs kept nowhere (issue 27 item 13) */
    if (path && (!*path || strcmp(path, ":memory:") == 0))
        luaL_error(L,
                   "field 'db' must name a database file, got '%s': runs "
                   "recorded there would be kept nowhere (to simulate "
                   "without recording, set record = \"none\")",
                   path);
    rec_db *worker = s->db_hook ? s->db_hook(L, path) : NULL;
    if (worker) /* a sweep's worker */
        return worker;
    if (path)
        bind_sandbox_db(L, path);
    ps_err err;
    rec_db *db = run_session_db(s->run, path, &err);
    if (!db)
        bind_raise(L, &err);
    return db;
}

/* [-0, +0] */
struct run_session *bind_run_session(lua_State *L)
{
    return get_session(L)->run;
}

/* [-0, +0] */
void bind_set_database_hook(lua_State *L, bind_database_hook hook)
{
    get_session(L)->db_hook = hook;
}

/* A registry object: the pointer and how to free it. */
typedef struct ctx_box {
    void *p;
    void (*drop)(void *);
} ctx_box;

#define CTX_TYPE "pipesim.ctx"

/* [-0, +0] */
static int ctx_gc(lua_State *L)
{
    ctx_box *b = luaL_checkudata(L, 1, CTX_TYPE);
    if (b->p)
        b->drop(b->p);
    b->p = NULL;
    return 0;
}

/* [-0, +0] */
void *bind_context(lua_State *L, const char *key, void *(*make)(void),
                   void (*drop)(void *))
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, key) == LUA_TUSERDATA) {
        ctx_box *b = lua_touserdata(L, -1);
        lua_pop(L, 1);
        if (b->p) /* NULL when its __gc was called by hand: make a new one */
            return b->p;
    } else {
        lua_pop(L, 1);
    }
    ctx_box *b = lua_newuserdatauv(L, sizeof *b, 0);
    b->p = NULL;
    b->drop = drop;
    static const luaL_Reg meta[] = {{"__gc", ctx_gc}, {NULL, NULL}};
    bind_setmetatable(L, CTX_TYPE, meta);
    if (!(b->p = make()))
        luaL_error(L, "out of memory");
    lua_setfield(L, LUA_REGISTRYINDEX, key);
    return b->p;
}

/* [-0, +0] */
void bind_count_run(lua_State *L)
{
    run_session_count(get_session(L)->run);
}

/* [-0, +0] */
long bind_runs_recorded(lua_State *L)
{
    session *s = get_session(L);
    return s ? run_session_runs(s->run) : 0;
}

/* [-0, +0] */
const bind_session *bind_get_session(lua_State *L)
{
    session *s = get_session(L);
    return s ? &s->s : NULL;
}

/* [-0, +0] */
void bind_progress(lua_State *L)
{
    run_session_progress(get_session(L)->run);
}

/* [-0, +0] */
void bind_progress_sweep(lua_State *L, long done, long total)
{
    run_session_progress_sweep(get_session(L)->run, done, total);
}

/* [-0, +0] core.progress(on): turns the progress line on (when stderr is a
 * terminal) or off. */
static int core_progress(lua_State *L)
{
    run_session_set_progress(get_session(L)->run, lua_toboolean(L, 1));
    return 0;
}

/* [-0, +0] */
int bind_finish(lua_State *L, long *runs, const char **db_path, ps_err *err)
{
    session *s = get_session(L);
    bind_session_end(L);
    if (!s) {
        *runs = 0;
        *db_path = NULL;
        return PS_OK;
    }
    return run_session_finish(s->run, runs, db_path, &s->total, err);
}

/* [-0, +0] */
int64_t bind_finish_total(lua_State *L)
{
    session *s = get_session(L);
    return s ? s->total : -1;
}

/* [-0, +1] -D key=value: numbers become numbers, "true"/"false" booleans. */
static void push_args(lua_State *L, const session *s)
{
    lua_createtable(L, 0, s->s.ndefs);
    for (int i = 0; i < s->s.ndefs; i++) {
        const char *d = s->s.defs[i], *sep = strchr(d, '=');
        lua_pushlstring(L, d, (size_t)(sep - d));
        const char *v = sep + 1;
        if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0)
            lua_pushboolean(L, v[0] == 't');
        else if (!lua_stringtonumber(L, v))
            lua_pushstring(L, v);
        lua_settable(L, -3);
    }
}

/* [-0, +1] */
static int core_args(lua_State *L)
{
    push_args(L, get_session(L));
    return 1;
}

/* [-0, +1] */
static int core_scenario(lua_State *L)
{
    session *s = get_session(L);
    lua_pushstring(L, s->s.scenario ? s->s.scenario : "");
    return 1;
}

/* [-0, +1] */
static int core_parse(lua_State *L)
{
    static const char *const kinds[] = {
        "time", "bytes", "bandwidth", "flop", "flop_rate", "ratio", NULL};
    int kind = luaL_checkoption(L, 2, NULL, kinds);
    if (lua_type(L, 1) == LUA_TNUMBER) {
        lua_settop(L, 1);
        return 1;
    }
    double v;
    ps_err err;
    luaL_checkstring(L, 1);
    if (bind_parse_quantity(L, 1, kind, &v, &err))
        return bind_raise(L, &err);
    lua_pushnumber(L, v);
    return 1;
}

const luaL_Reg bind_core_funcs[] = {
    {"args", core_args},   {"scenario", core_scenario},
    {"parse", core_parse}, {"progress", core_progress},
    {NULL, NULL},
};

/* [-0, +0] */
void bind_setmetatable(lua_State *L, const char *tname, const luaL_Reg *meta)
{
    bind_check_open(L); /* every pipesim object with a finalizer */
    if (luaL_newmetatable(L, tname))
        luaL_setfuncs(L, meta, 0);
    lua_setmetatable(L, -2);
}

/* [-0, +0] the session userdata's __gc: what is still open is closed
 * (left as it is in a forked worker: run_session_free) */
static int session_gc(lua_State *L)
{
    session *s = lua_touserdata(L, 1);
    run_session_free(s->run);
    s->run = NULL;
    return 0;
}

/* [-0, +0] raises when out of memory */
void bind_session_new(lua_State *L, const bind_session *bs)
{
    session *s = lua_newuserdatauv(L, sizeof *s, 0);
    memset(s, 0, sizeof *s);
    s->s = *bs;
    s->total = -1;
    if (luaL_newmetatable(L, SESSION_TYPE)) {
        lua_pushcfunction(L, session_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    if (!(s->run = run_session_new(s->s.default_db)))
        luaL_error(L, "out of memory");
    lua_setfield(L, LUA_REGISTRYINDEX, SESSION_KEY);
}
