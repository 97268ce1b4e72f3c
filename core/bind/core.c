/* Binding infrastructure: module setup, the session (default database,
 * -D arguments), open databases, and field readers with messages that name
 * the field and the value. */
#include "bind/bind.h"

#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/limit.h"
#include "base/unit.h"
#include "rec/rec.h"
#include "run/proc.h"

#define SESSION_KEY "pipesim.session"
#define DB_TYPE "pipesim.db"

typedef struct db_handle {
    rec_db *db;
    char *path;
} db_handle;

typedef struct session {
    bind_session s;
    long runs;      /* recorded */
    long simulated; /* all runs, recorded or not */
    int default_used;
    int progress;       /* 1: on when stderr is a terminal, 0: off */
    int progress_shown; /* a progress line is on screen */
    double started, last_shown;
    long sweep_total; /* points of the sweep in progress, 0: none */
    double sweep_started;
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
    if (s && s->ended)
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

/* The connections a forked sweep worker inherited from the writer
 * (bind/pool.c closes its Lua state before _exit): SQLite forbids using a
 * connection across fork(), and closing one is a use (it may roll back,
 * checkpoint or delete the log under the writer), so they are left as they
 * are and kept reachable here until the worker's _exit. */
static rec_db **inherited;
static size_t ninherited;

static void keep_inherited(rec_db *db)
{
    rec_forked_release(db); /* its page cache: interior pointers only */
    rec_db **k = realloc(inherited, (ninherited + 1) * sizeof *k);
    if (!k)
        return; /* out of memory at exit: the worker ends anyway */
    inherited = k;
    inherited[ninherited++] = db;
}

/* [-0, +0] */
static int db_gc(lua_State *L)
{
    db_handle *h = luaL_checkudata(L, 1, DB_TYPE);
    /* a forked worker, even while its Lua state closes: finalizers of
     * what it inherited leave the writer's resources alone */
    if (h->db && proc_is_worker())
        keep_inherited(h->db);
    else
        rec_close(h->db, NULL);
    h->db = NULL;
    free(h->path);
    h->path = NULL;
    return 0;
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
    if (!path) {
        path = s->s.default_db;
        s->default_used = 1;
    } else {
        bind_sandbox_db(L, path);
    }
    lua_getfield(L, LUA_REGISTRYINDEX, "pipesim.dbs");
    lua_getfield(L, -1, path);
    if (!lua_isnil(L, -1)) {
        db_handle *h = lua_touserdata(L, -1);
        lua_pop(L, 2);
        return h->db;
    }
    lua_pop(L, 1);
    db_handle *h = lua_newuserdatauv(L, sizeof *h, 0);
    h->db = NULL;
    h->path = NULL;
    static const luaL_Reg meta[] = {{"__gc", db_gc}, {NULL, NULL}};
    bind_setmetatable(L, DB_TYPE, meta);
    ps_err err;
    h->db = rec_open(path, &err);
    if (!h->db)
        bind_raise(L, &err);
    h->path = strdup(path);
    lua_setfield(L, -2, path);
    lua_pop(L, 1);
    return h->db;
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
    get_session(L)->runs++;
}

/* [-0, +0] */
long bind_runs_recorded(lua_State *L)
{
    session *s = get_session(L);
    return s ? s->runs : 0;
}

static double monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* [-0, +0] */
const bind_session *bind_get_session(lua_State *L)
{
    session *s = get_session(L);
    return s ? &s->s : NULL;
}

/* [-0, +0] A sweep of many runs shows "pipesim: 1200 runs, 9800 runs/s" on
 * stderr, redrawn at most 5 times a second, once it has run for a second; only
 * when stderr is a terminal, so logs and tests see nothing. */
void bind_progress(lua_State *L)
{
    session *s = get_session(L);
    double t = monotonic();
    if (s->simulated++ == 0)
        s->started = t;
    if (s->sweep_total > 0) /* the sweep's line says more */
        return;
    if (!s->progress || t - s->started < 1.0 || t - s->last_shown < 0.2)
        return;
    s->last_shown = t;
    s->progress_shown = 1;
    fprintf(stderr, "\rpipesim: %ld runs, %.0f runs/s ", s->simulated,
            (double)s->simulated / (t - s->started));
    fflush(stderr);
}

static void progress_done(session *s)
{
    if (s && s->progress_shown) {
        fputc('\n', stderr);
        s->progress_shown = 0;
    }
}

/* [-0, +0] "pipesim: 1200/20000 points, 9800 points/s, 2 s left", redrawn as
 * bind_progress's line is; the rate is over the sweep so far. */
void bind_progress_sweep(lua_State *L, long done, long total)
{
    session *s = get_session(L);
    double t = monotonic();
    if (total <= 0) {
        s->sweep_total = 0;
        progress_done(s);
        return;
    }
    if (s->sweep_total != total || done == 0) {
        s->sweep_total = total;
        s->sweep_started = t;
        return;
    }
    double dt = t - s->sweep_started;
    if (!s->progress || dt < 1.0 || (t - s->last_shown < 0.2 && done < total))
        return;
    s->last_shown = t;
    s->progress_shown = 1;
    double rate = (double)done / dt;
    fprintf(stderr, "\rpipesim: %ld/%ld points, %.0f points/s, %.0f s left ",
            done, total, rate, rate > 0 ? (double)(total - done) / rate : 0.0);
    fflush(stderr);
}

/* [-0, +0] core.progress(on): turns the progress line on (when stderr is a
 * terminal) or off. */
static int core_progress(lua_State *L)
{
    session *s = get_session(L);
    s->progress = lua_toboolean(L, 1) && isatty(STDERR_FILENO);
    if (!s->progress)
        progress_done(s);
    return 0;
}

/* [-0, +0] */
int bind_finish(lua_State *L, long *runs, const char **db_path, ps_err *err)
{
    session *s = get_session(L);
    int rc = PS_OK;
    bind_session_end(L);
    progress_done(s);
    long runs_in = s ? s->runs : 0;
    *db_path = s && s->default_used ? s->s.default_db : NULL;
    if (s)
        s->total = -1;
    lua_getfield(L, LUA_REGISTRYINDEX, "pipesim.dbs");
    if (lua_istable(L, -1)) {
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            db_handle *h = lua_touserdata(L, -1);
            if (h && h->db) {
                /* the flush first: a batch whose commit fails takes its
                 * runs back, and the count says only what is in the file */
                ps_err e, ce;
                int failed = rec_flush(h->db, &e);
                runs_in -= (long)rec_lost_runs(h->db);
                /* the file's total for main's summary line, on the open
                 * connection (reopening the file to count cost ~1 ms) */
                int64_t n;
                if (!failed && *db_path && h->path &&
                    strcmp(h->path, *db_path) == 0 &&
                    rec_run_count(h->db, &n, &ce) == PS_OK)
                    s->total = n;
                if (rec_close(h->db, &ce) && !failed) {
                    failed = 1;
                    e = ce;
                }
                if (failed && rc == PS_OK)
                    rc = ps_errf(err, "%s", e.msg);
                h->db = NULL;
            }
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    *runs = runs_in;
    return rc;
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

/* [-0, +0] */
void bind_session_new(lua_State *L, const bind_session *bs)
{
    session *s = lua_newuserdatauv(L, sizeof *s, 0);
    memset(s, 0, sizeof *s);
    s->s = *bs;
    s->total = -1;
    s->progress = isatty(STDERR_FILENO);
    lua_setfield(L, LUA_REGISTRYINDEX, SESSION_KEY);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "pipesim.dbs");
}
