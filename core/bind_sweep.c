/* The Lua side of sweeps (lua/pipesim/sweep.lua): a run's sweep columns
 * (meta), the scenario version, --jobs and --shard, and the worker pool
 * that evaluates a sweep's points in forked processes while this process
 * alone writes the databases, in point order (sweep_pool.c). */
#include "bind.h"

#include <lauxlib.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"

#define SWEEP_KEY "pipesim.sweep"

#define MAX_BATCHED 16 /* databases one sweep batches; more commit per run */

/* Per Lua state: what the session says about sweeps. */
typedef struct sweep_state {
    char scenario[32]; /* "fnv1a64:<16 hex>", "" until computed */
    long sweeps;       /* ps.sweep calls so far */
    int batching;      /* inside ps.sweep's evaluation of its points */
    /* the databases whose batches the sweep's end commits (the session's
     * handles, open until bind_finish) */
    rec_db *batched[MAX_BATCHED];
    int nbatched;
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

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3u;
    }
    return h;
}

/* The scenario's version: FNV-1a 64 over the script's bytes and each -D
 * argument (NUL-separated), so that shards of one command line agree and
 * an edited script or other arguments do not. Files the script requires
 * are not included. [-0, +0] */
static const char *scenario_version(lua_State *L)
{
    sweep_state *st = get_state(L);
    if (st->scenario[0])
        return st->scenario;
    const bind_session *s = bind_get_session(L);
    uint64_t h = 0xcbf29ce484222325u;
    FILE *f = s && s->scenario ? fopen(s->scenario, "rb") : NULL;
    if (f) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            h = fnv1a(h, buf, n);
        fclose(f);
    }
    for (int i = 0; s && i < s->ndefs; i++)
        h = fnv1a(h, s->defs[i], strlen(s->defs[i]) + 1);
    snprintf(st->scenario, sizeof st->scenario, "fnv1a64:%016llx",
             (unsigned long long)h);
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

/* core.sweep_begin(): counts a ps.sweep call (for --shard's check).
 * [-0, +0] */
static int core_sweep_begin(lua_State *L)
{
    get_state(L)->sweeps++;
    return 0;
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
    int on = st->batching && sweep != NULL;
    /* a worker's scratch databases are closed, which commits, after each
     * chunk: nothing to list */
    if (on && !bind_sweep_worker(L)) {
        int i = 0;
        while (i < st->nbatched && st->batched[i] != db)
            i++;
        if (i == st->nbatched) {
            if (i == MAX_BATCHED)
                on = 0;
            else
                st->batched[st->nbatched++] = db;
        }
    }
    rec_set_batch(db, on);
    return on;
}

/* core.sweep_batch(on): ps.sweep's runs commit in batches from here
 * (rec_set_batch); off commits them (before ps.sweep returns any id),
 * raising the first commit's error. [-0, +0] */
static int core_sweep_batch(lua_State *L)
{
    sweep_state *st = get_state(L);
    st->batching = lua_toboolean(L, 1);
    if (st->batching)
        return 0;
    ps_err err = {0};
    int rc = PS_OK;
    for (int i = 0; i < st->nbatched; i++) {
        ps_err e;
        rec_set_batch(st->batched[i], 0);
        if (rec_flush(st->batched[i], &e) && rc == PS_OK) {
            err = e;
            rc = PS_ERR;
        }
    }
    st->nbatched = 0;
    return rc ? bind_raise(L, &err) : 0;
}

const luaL_Reg bind_sweep_funcs[] = {
    {"sweep_info", core_sweep_info},         {"sweep_begin", core_sweep_begin},
    {"sweep_progress", core_sweep_progress}, {"sweep_batch", core_sweep_batch},
    {"sweep_map", bind_sweep_map},           {NULL, NULL},
};
