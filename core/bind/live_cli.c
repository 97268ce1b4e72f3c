/* Live mode's commands (issue 25): pipesim calibrate, pipesim worker
 * --rendezvous and the coordinator's side of pipesim run --rendezvous.
 * Apart from bind/live.c, which bind/open.c registers, so that the
 * commands may set up a Lua state (bind_setup) without a circle of
 * files. */
#include <errno.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bind/bind.h"
#include "bind/live.h"

/* ------------------------------------------------------------------ */
/* pipesim calibrate                                                   */

static const char calibrate_usage[] =
    "pipesim calibrate --live [-o CLUSTER.lua] [--ranks N] [--profile FILE.csv "
    "--layers N [--width W] [--samples S]]";

/* [-0, +0] t[k] = the number in v, or raises naming the option */
static void set_int_opt(lua_State *L, const char *k, const char *v,
                        const char *opt)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < 1 || n > 1 << 20)
        luaL_error(L, "calibrate: %s %s: expected a positive integer", opt, v);
    lua_pushinteger(L, n);
    lua_setfield(L, -2, k);
}

/* [-0, +1] the spec table of ps.calibrate from the options */
static int calibrate_spec(lua_State *L)
{
    int argc = (int)lua_tointeger(L, 1);
    char **argv = lua_touserdata(L, 2);
    lua_newtable(L);
    lua_newtable(L); /* compute */
    int layers = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return luaL_error(L, "calibrate: %s needs a value (usage: %s)", a,
                              calibrate_usage);
        i++;
        if (strcmp(a, "-o") == 0) {
            lua_pushstring(L, v);
            lua_setfield(L, -3, "cluster");
        } else if (strcmp(a, "--profile") == 0) {
            lua_pushstring(L, v);
            lua_setfield(L, -3, "profile");
        } else if (strcmp(a, "--ranks") == 0) {
            lua_pushvalue(L, -2);
            set_int_opt(L, "ranks", v, a);
            lua_pop(L, 1);
        } else if (strcmp(a, "--layers") == 0) {
            lua_pushvalue(L, -2);
            set_int_opt(L, "layers", v, a);
            lua_pop(L, 1);
            layers = 1;
        } else if (strcmp(a, "--width") == 0) {
            set_int_opt(L, "width", v, a);
        } else if (strcmp(a, "--samples") == 0) {
            set_int_opt(L, "samples", v, a);
        } else {
            return luaL_error(L, "calibrate: unknown option '%s' (usage: %s)",
                              a, calibrate_usage);
        }
    }
    if (layers) {
        lua_pushstring(L, "mlp");
        lua_setfield(L, -2, "model");
        lua_setfield(L, -2, "compute");
    } else {
        lua_pop(L, 1);
    }
    return 1;
}

/* [-0, +0] runs ps.calibrate and prints what it found */
static int calibrate_run(lua_State *L)
{
    lua_pushcfunction(L, calibrate_spec);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_call(L, 2, 1);
    int spec = lua_gettop(L);
    lua_getfield(L, spec, "cluster");
    if (lua_isnil(L, -1)) {
        lua_pushstring(L, "results/calibrated_cluster.lua");
        lua_setfield(L, spec, "cluster");
    }
    lua_pop(L, 1);
    lua_getglobal(L, "require");
    lua_pushstring(L, "pipesim");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "calibrate");
    lua_pushvalue(L, spec);
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "latency");
    lua_getfield(L, -2, "bandwidth");
    lua_getfield(L, spec, "cluster");
    lua_getfield(L, -4, "bus");
    printf("latency %.3g us, bandwidth %.3g GB/s (%s) -> %s\n",
           lua_tonumber(L, -4) * 1e6, lua_tonumber(L, -3) / 1e9,
           lua_isnil(L, -1) ? "ping-pong, least squares"
                            : "a flow of the exchange among all ranks",
           lua_tostring(L, -2));
    lua_pop(L, 1);
    lua_getfield(L, spec, "profile");
    if (lua_isstring(L, -1))
        printf("per-layer times of the live MLP -> %s\n", lua_tostring(L, -1));
    return 0;
}

int bind_live_calibrate_main(int argc, char **argv, const char *luadir)
{
    if (mkdir("results", 0777) != 0 && errno != EEXIST)
        return ps_fail("results: cannot create the directory: %s",
                       strerror(errno));
    lua_State *L = bind_newstate();
    if (!L)
        return ps_fail("cannot create a Lua state");
    luaL_openlibs(L);
    bind_session s = {"results/calibrate.db", "calibrate", NULL, 0, 1, 0, 0};
    bind_setup(L, luadir, &s);
    ps_err err;
    int rc = bind_limits(L, luadir, 0, &err);
    if (rc) {
        ps_print_error(err.msg);
    } else {
        lua_pushcfunction(L, calibrate_run);
        lua_pushinteger(L, argc);
        lua_pushlightuserdata(L, argv);
        if (lua_pcall(L, 2, 0, 0) != LUA_OK)
            rc = ps_fail("%s", lua_tostring(L, -1));
    }
    bind_limits_end(L);
    lua_close(L);
    return rc;
}

/* ------------------------------------------------------------------ */
/* pipesim worker --rendezvous HOST:PORT                               */

/* [-0, +0] loads and runs the coordinator's scenario text */
static int worker_scenario(lua_State *L)
{
    const live_job *job = lua_touserdata(L, 1);
    char chunk[300];
    snprintf(chunk, sizeof chunk, "@%s", job->name);
    if (luaL_loadbufferx(L, job->text, job->len, chunk, "t") != LUA_OK)
        return lua_error(L);
    lua_call(L, 0, 0);
    return 0;
}

int bind_live_worker_main(const char *hostport, double timeout,
                          const char *luadir)
{
    live_job job;
    ps_err err;
    if (live_rdv_connect(hostport, timeout, &job, &err))
        return ps_fail("worker: %s", err.msg);
    /* the scenario's own output is the coordinator's to print; what it
     * records goes to a scratch database, removed at the end */
    if (!freopen("/dev/null", "w", stdout))
        return ps_fail("worker: cannot silence the scenario's output");
    char db[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(db, sizeof db, "%s/pipesim-worker-%ld.db", tmp ? tmp : "/tmp",
             (long)getpid());
    lua_State *L = bind_newstate();
    if (!L)
        return ps_fail("cannot create a Lua state");
    luaL_openlibs(L);
    bind_session s = {db, job.name, (const char *const *)job.defs, job.ndefs, 1,
                      0,  0};
    bind_setup(L, luadir, &s);
    bind_sandbox(L, luadir, ".", db); /* code from the network */
    int rc = bind_limits(L, luadir, 0, &err);
    if (rc) {
        ps_print_error(err.msg);
    } else {
        lua_pushcfunction(L, worker_scenario);
        lua_pushlightuserdata(L, &job);
        if (lua_pcall(L, 1, 0, 0) != LUA_OK)
            rc = ps_fail("worker: %s", lua_tostring(L, -1));
    }
    long runs;
    const char *path;
    bind_finish(L, &runs, &path, &err);
    bind_limits_end(L);
    lua_close(L);
    live_rdv_end();
    live_job_free(&job);
    char side[300];
    const char *ext[] = {"", "-wal", "-shm"};
    for (int k = 0; k < 3; k++) {
        snprintf(side, sizeof side, "%s%s", db, ext[k]);
        unlink(side);
    }
    return rc;
}

int bind_live_rendezvous(const char *hostport, int workers, double timeout,
                         const char *scenario, const char *const *defs,
                         int ndefs, ps_err *err)
{
    FILE *f = fopen(scenario, "rb");
    if (!f)
        return ps_errf(err, "%s: cannot read: %s", scenario, strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = 2 * (len + n + 1);
            char *t = realloc(text, cap);
            if (!t) {
                free(text);
                fclose(f);
                return ps_errf(err, "out of memory");
            }
            text = t;
        }
        memcpy(text + len, chunk, n);
        len += n;
    }
    fclose(f);
    int rc = live_rdv_serve(hostport, workers, timeout, scenario,
                            text ? text : "", len, defs, ndefs, err);
    free(text);
    return rc;
}

void bind_live_rendezvous_end(void)
{
    live_rdv_end();
}
