/* The Lua side of sweeps (lua/pipesim/sweep.lua): a run's sweep columns
 * (meta), the scenario version, --jobs and --shard, and the worker pool
 * that evaluates a sweep's points in forked processes while this process
 * alone writes the databases, in point order (sweep_pool.c); and the
 * per-point helpers that Lua would pay most for: table copies and counts,
 * and JSON of plain data (core.json_plain). */
#include "bind/bind.h"

#include <ctype.h>
#include <lauxlib.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/limit.h"
#include "base/utf8.h"
#include "rec/rec.h"
#include "run/session.h"
#include "run/version.h"

#define SWEEP_KEY "pipesim.sweep"

/* Per Lua state: what the session says about sweeps. */
typedef struct sweep_state {
    char scenario[32]; /* "fnv1a64:<16 hex>", "" until computed */
    long sweeps;       /* ps.sweep calls so far */
    int batching;      /* inside ps.sweep's evaluation of its points */
    int user_batch;    /* inside ps.batch: every ps.run batched */
} sweep_state;

/* [-0, +0] the state, made and kept in the registry on first use */
static sweep_state *get_state(lua_State *L)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, SWEEP_KEY) != LUA_TUSERDATA) {
        lua_pop(L, 1);
        sweep_state *st = lua_newuserdatauv(L, sizeof *st, 0);
        memset(st, 0, sizeof *st);
        lua_setfield(L, LUA_REGISTRYINDEX, SWEEP_KEY);
        return st;
    }
    sweep_state *st = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return st;
}

/* The scenario's version (run/version.h) from its bytes' hash and the
 * session's -D arguments. [-0, +0] */
static void set_version(lua_State *L, uint64_t src_hash)
{
    sweep_state *st = get_state(L);
    const bind_session *s = bind_get_session(L);
    run_version(src_hash, s ? s->defs : NULL, s ? s->ndefs : 0, st->scenario,
                sizeof st->scenario);
}

/* The version of the scenario's bytes as bind_load_scenario read them
 * (their hash in the registry, BIND_SOURCE_HASH_KEY); else (a cluster file
 * of pipesim nccl-tests) of the session's file when it is a regular one.
 * [-0, +0] */
static const char *scenario_version(lua_State *L)
{
    sweep_state *st = get_state(L);
    if (st->scenario[0])
        return st->scenario;
    if (lua_getfield(L, LUA_REGISTRYINDEX, BIND_SOURCE_HASH_KEY) ==
        LUA_TNUMBER) {
        uint64_t h = (uint64_t)lua_tointeger(L, -1);
        lua_pop(L, 1);
        set_version(L, h);
        return st->scenario;
    }
    lua_pop(L, 1);
    const bind_session *s = bind_get_session(L);
    char *bytes = NULL;
    size_t n = 0;
    struct stat sb;
    ps_err err;
    if (s && s->scenario && stat(s->scenario, &sb) == 0 &&
        S_ISREG(sb.st_mode) && limit_read_file(s->scenario, &bytes, &n, &err))
        bytes = NULL, n = 0;
    set_version(L, run_fnv1a(RUN_FNV1A_BASIS, bytes ? bytes : "", n));
    limit_free(bytes);
    return st->scenario;
}

/* [-0, +0] reads the meta table (the strings stay anchored in the table at
 * idx) */
void bind_meta(lua_State *L, int idx, rec_meta *m)
{
    memset(m, 0, sizeof *m);
    m->scenario = scenario_version(L);
    if (!bind_table(L, idx, "meta", NULL))
        return;
    int t = lua_gettop(L);
    bind_check_fields(L, t, "meta", bind_fields_meta);
    m->sweep = bind_string_in(L, t, "meta", "sweep");
    m->point = bind_string_in(L, t, "meta", "point");
    m->tags = bind_string_in(L, t, "meta", "tags");
    m->model = bind_string_in(L, t, "meta", "model");
    long long v = 0;
    if (bind_int(L, t, "meta.point_index", 0, LLONG_MAX, &v))
        m->point_index = v;
    if (bind_int(L, t, "meta.seq_length", 1, LLONG_MAX, &v))
        m->seq_length = v;
    if (bind_int(L, t, "meta.micro_batch", 1, LLONG_MAX, &v))
        m->micro_batch = v;
    if (bind_int(L, t, "meta.global_batch", 1, LLONG_MAX, &v))
        m->global_batch = v;
    bind_efficiency(L, t, &m->eff);
    lua_pop(L, 1); /* the strings stay alive in the table at idx */
}

/* [-0, +0] */
int bind_sweeps_run(lua_State *L)
{
    return get_state(L)->sweeps > 0;
}

/* core.sweep_info() -> jobs, shard K, shard N (0, 1 without --shard).
 * [-0, +3] */
static int core_sweep_info(lua_State *L)
{
    const bind_session *s = bind_get_session(L);
    lua_pushinteger(L, s && s->jobs > 0 ? s->jobs : 1);
    lua_pushinteger(L, s && s->shard_n > 0 ? s->shard_k : 0);
    lua_pushinteger(L, s && s->shard_n > 0 ? s->shard_n : 1);
    return 3;
}

/* The FNV-1a 64 of the list of strings at idx (each with its NUL), as
 * "fnv1a64:<16 hex>" into buf; its length. [-0, +0] */
static lua_Integer hash_list(lua_State *L, int idx, char *buf, size_t size)
{
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    uint64_t h = RUN_FNV1A_BASIS;
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, i);
        size_t len = 0;
        const char *j = lua_tolstring(L, -1, &len);
        if (j)
            h = run_fnv1a(h, j, len + 1);
        lua_pop(L, 1);
    }
    snprintf(buf, size, "fnv1a64:%016llx", (unsigned long long)h);
    return n;
}

/* Records the sweep beginning (its name and points' JSON at 1 and 2, when
 * given) as a row of the session's database's shard table, committed now
 * (run_session_shard_begin: the session's token names this process's
 * rows). [-0, +0] raises when the database cannot be written */
static void record_shard(lua_State *L, const bind_session *s)
{
    char hash[32], host[256];
    rec_shard sh = {.scenario = scenario_version(L),
                    .k = (int32_t)s->shard_k,
                    .n = (int32_t)s->shard_n,
                    .sweep = lua_tostring(L, 1),
                    .points = -1,
                    .pid = (int64_t)getpid()};
    if (lua_istable(L, 2)) {
        sh.points = (int64_t)hash_list(L, 2, hash, sizeof hash);
        sh.points_hash = hash;
    }
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    sh.host = host;
    rec_db *db = bind_database(L, NULL);
    ps_err err;
    if (run_session_shard_begin(bind_run_session(L), db, &sh, &err))
        bind_raise(L, &err);
}

/* core.sweep_begin([name, jsons]): counts a ps.sweep call (for --shard's
 * check); under --shard K/N, records it in the session's database (name
 * and the points' JSON, in order, identify the sweep; a ps.search gives
 * neither). [-0, +0] */
static int core_sweep_begin(lua_State *L)
{
    sweep_state *st = get_state(L);
    st->sweeps++;
    const bind_session *s = bind_get_session(L);
    if (s && s->shard_n > 0)
        record_shard(L, s);
    return 0;
}

/* [-0, +0] */
int bind_sweep_shard_end(lua_State *L, ps_err *err)
{
    return run_session_shard_end(bind_run_session(L), err);
}

/* core.sweep_progress(done, total): the progress line of a sweep
 * evaluated in this process. [-0, +0] */
static int core_sweep_progress(lua_State *L)
{
    bind_progress_sweep(L, (long)luaL_checkinteger(L, 1),
                        (long)luaL_checkinteger(L, 2));
    return 0;
}

/* [-0, +0] */
int bind_sweep_batch(lua_State *L, rec_db *db, const char *sweep)
{
    sweep_state *st = get_state(L);
    int on = (st->batching && sweep != NULL) || st->user_batch;
    /* a worker's scratch databases are closed, which commits, after each
     * chunk: nothing to list */
    return run_session_batch(bind_run_session(L), db, on,
                             !bind_sweep_worker(L));
}

/* Commits the batch of every database batched so far
 * (run_session_flush_batched), raising the first commit's error.
 * [-0, +0] */
static int flush_batched(lua_State *L)
{
    ps_err err;
    if (run_session_flush_batched(bind_run_session(L), &err))
        return bind_raise(L, &err);
    return 0;
}

/* core.sweep_batch(on): ps.sweep's runs commit in batches from here
 * (rec_set_batch); off commits them (before ps.sweep returns any id),
 * raising the first commit's error. [-0, +0] */
static int core_sweep_batch(lua_State *L)
{
    sweep_state *st = get_state(L);
    st->batching = lua_toboolean(L, 1);
    return st->batching ? 0 : flush_batched(L);
}

/* core.run_batch(on): ps.batch's runs, every ps.run of the function it
 * calls, commit in batches as a sweep's do (lua/pipesim/init.lua); off
 * commits them, raising the first commit's error. [-0, +0] */
static int core_run_batch(lua_State *L)
{
    sweep_state *st = get_state(L);
    st->user_batch = lua_toboolean(L, 1);
    return st->user_batch ? 0 : flush_batched(L);
}

/* [-0, +0] The number of t's entries (t at idx, raw). */
static int count_entries(lua_State *L, int idx)
{
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        n++;
    }
    return n;
}

/* [-0, +0] t[k] = v for every entry of the table at from into the table
 * on top (raw). */
static void copy_entries(lua_State *L, int from)
{
    int to = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, from)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, to);
    }
}

/* core.copy_fields(t [, over [, extra]]) -> a new table with t's entries,
 * then over's on top of them, sized for `extra` more; or nil when t or
 * over has a metatable (the caller then copies with pairs, which may have
 * a __pairs). ps.sweep's run table for a point of a `base` sweep and
 * ps.run's copy of it for the core: a table filled from Lua grows by a
 * rehash at every power of two, the largest cost of a point in Lua.
 * [-0, +1] */
static int core_copy_fields(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int over = !lua_isnoneornil(L, 2);
    if (over)
        luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer extra = luaL_optinteger(L, 3, 0);
    luaL_argcheck(L, extra >= 0 && extra <= 1024, 3, "extra out of range");
    for (int i = 1; i <= 1 + over; i++)
        if (lua_getmetatable(L, i)) {
            lua_pushnil(L);
            return 1;
        }
    int n = count_entries(L, 1) + (over ? count_entries(L, 2) : 0);
    lua_createtable(L, 0, n + (int)extra);
    copy_entries(L, 1);
    if (over)
        copy_entries(L, 2);
    return 1;
}

/* --- core.json_plain: lua/pipesim/init.lua's json for plain data --- */

#define JSON_DEPTH 16  /* deeper (or cyclic) data goes to the Lua encoder */
#define JSON_KEYS 64   /* keys of one object sorted here */
#define JSON_MAX 16384 /* longer texts too */
#define JSON_KEY "pipesim.json_plain" /* registry slot of the buffer */

typedef struct jbuf {
    char s[JSON_MAX];
    size_t n;
} jbuf;

/* 0 when the text would not fit */
static int jadd(jbuf *b, const char *s, size_t n)
{
    if (n > sizeof b->s - b->n)
        return 0;
    memcpy(b->s + b->n, s, n);
    b->n += n;
    return 1;
}

#define JADD(b, lit) jadd(b, lit, sizeof lit - 1)

/* Whether the string at idx prints as itself between quotes in init.lua's
 * quote: no byte of its pattern [%c"\\] (iscntrl, as Lua's %c), no NUL,
 * and well-formed UTF-8 (base/utf8.h; quote writes \ufffd for the rest). */
static int plain_string(lua_State *L, int idx)
{
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0 || c == '"' || c == '\\' || iscntrl(c))
            return 0;
        int len = c < 0x80 ? 1 : utf8_len(s + i);
        if (!len)
            return 0;
        i += (size_t)len;
    }
    return 1;
}

/* v in decimal as LUA_INTEGER_FMT ("%lld") prints it, without snprintf's
 * format parsing (most of json_plain's cost for a list of layer counts);
 * returns the length. */
static int int_text(char *out, lua_Integer v)
{
    char tmp[24];
    int n = 0;
    /* in unsigned arithmetic, so that the most negative value negates */
    lua_Unsigned u = v < 0 ? 0u - (lua_Unsigned)v : (lua_Unsigned)v;
    do {
        tmp[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    int len = 0;
    if (v < 0)
        out[len++] = '-';
    while (n)
        out[len++] = tmp[--n];
    return len;
}

static int key_order(const void *a, const void *b)
{
    /* Lua's < on strings without NULs (lvm.c l_strcmp) */
    return strcoll(*(const char *const *)a, *(const char *const *)b);
}

/* [-0, +0] Appends the value at idx as init.lua's put writes it; 0 for
 * anything its fast path leaves to put: a metatable, an object key other
 * than a plain string, userdata, functions, strings to escape, nesting
 * deeper than JSON_DEPTH (cycles included), a text over JSON_MAX. The
 * stack above idx is left as it was only on success (the caller resets
 * it). */
static int json_put(lua_State *L, int idx, jbuf *b, int depth)
{
    char num[64];
    int n;
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            n = int_text(num, lua_tointeger(L, idx));
        } else {
            double v = lua_tonumber(L, idx);
            n = isnan(v) || isinf(v) ? snprintf(num, sizeof num, "null")
                                     : snprintf(num, sizeof num, "%.17g", v);
        }
        return jadd(b, num, (size_t)n);
    case LUA_TBOOLEAN:
        return lua_toboolean(L, idx) ? JADD(b, "true") : JADD(b, "false");
    case LUA_TSTRING: {
        if (!plain_string(L, idx))
            return 0;
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        return JADD(b, "\"") && jadd(b, s, len) && JADD(b, "\"");
    }
    case LUA_TTABLE: break;
    default: return 0;
    }
    if (depth >= JSON_DEPTH || lua_getmetatable(L, idx))
        return 0;
    lua_Unsigned len = lua_rawlen(L, idx);
    lua_pushnil(L);
    int empty = !lua_next(L, idx);
    if (!empty)
        lua_pop(L, 2);
    if (len > 0 || empty) {
        if (!JADD(b, "["))
            return 0;
        for (lua_Unsigned i = 1; i <= len; i++) {
            if (i > 1 && !JADD(b, ","))
                return 0;
            lua_rawgeti(L, idx, (lua_Integer)i);
            if (!json_put(L, lua_gettop(L), b, depth + 1))
                return 0;
            lua_pop(L, 1);
        }
        return JADD(b, "]");
    }
    const char *keys[JSON_KEYS];
    int nk = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING || nk == JSON_KEYS ||
            !plain_string(L, -1))
            return 0;
        keys[nk++] = lua_tostring(L, -1); /* anchored in the table */
    }
    qsort(keys, (size_t)nk, sizeof *keys, key_order);
    if (!JADD(b, "{"))
        return 0;
    for (int i = 0; i < nk; i++) {
        if ((i > 0 && !JADD(b, ",")) || !JADD(b, "\"") ||
            !jadd(b, keys[i], strlen(keys[i])) || !JADD(b, "\":"))
            return 0;
        lua_pushstring(L, keys[i]);
        lua_rawget(L, idx);
        if (!json_put(L, lua_gettop(L), b, depth + 1))
            return 0;
        lua_pop(L, 1);
    }
    return JADD(b, "}");
}

/* core.json_plain(v) -> the JSON text lua/pipesim/init.lua's json gives
 * for v, or nil when v is not plain data (json_put): run.params and
 * run.point of every point of a sweep, where the Lua encoder costs more
 * than the rest of the point's Lua. [-0, +1] */
static int core_json_plain(lua_State *L)
{
    luaL_checkany(L, 1);
    lua_settop(L, 1);
    luaL_checkstack(L, 2 * JSON_DEPTH + 8, "json_plain");
    /* the buffer: one per Lua state, kept in the registry (nothing here
     * runs Lua code, so no second call can start while one runs) */
    jbuf *b;
    if (lua_getfield(L, LUA_REGISTRYINDEX, JSON_KEY) != LUA_TUSERDATA) {
        lua_pop(L, 1);
        b = lua_newuserdatauv(L, sizeof *b, 0);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, JSON_KEY);
    }
    b = lua_touserdata(L, 2);
    b->n = 0;
    int ok = json_put(L, 1, b, 0);
    lua_settop(L, 2);
    if (ok)
        lua_pushlstring(L, b->s, b->n);
    else
        lua_pushnil(L);
    return 1;
}

/* core.count_fields(t) -> its number of entries (raw), or nil when t has
 * a metatable (pairs may then see others). [-0, +1] */
static int core_count_fields(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    if (lua_getmetatable(L, 1)) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, count_entries(L, 1));
    return 1;
}

const luaL_Reg bind_sweep_funcs[] = {
    {"count_fields", core_count_fields},
    {"json_plain", core_json_plain},
    {"copy_fields", core_copy_fields},
    {"sweep_info", core_sweep_info},
    {"sweep_begin", core_sweep_begin},
    {"sweep_progress", core_sweep_progress},
    {"sweep_batch", core_sweep_batch},
    {"run_batch", core_run_batch},
    {"sweep_map", bind_sweep_map},
    {NULL, NULL},
};
