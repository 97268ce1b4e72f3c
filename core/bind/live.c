/* Live mode's side of the binding (live/live.h): the fields that choose
 * and tune it (backend, iterations, warmup, watchdog, inject), the result
 * fields it adds (times, simulated, bytes_received), and bytes_log, the
 * JSON Lines byte counters of any backend (rec_bytes_log). ps.collective
 * and ps.run call these from bind/collective.c and bind/run.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unit.h"
#include "bind/bind.h"
#include "bind/live.h"
#include "live/calib.h"

/* The session's --bytes-log, for runs that name none (NULL: none). */
static const char *cli_bytes_log;

void bind_live_set_bytes_log(const char *path)
{
    cli_bytes_log = path;
}

/* Paths written by this process: the first run truncates, the next ones
 * append (a scenario's runs land in one file). */
#define MAX_LOGS 16
static char *written[MAX_LOGS];

static int first_write(const char *path)
{
    for (int i = 0; i < MAX_LOGS && written[i]; i++)
        if (strcmp(written[i], path) == 0)
            return 0;
    for (int i = 0; i < MAX_LOGS; i++)
        if (!written[i]) {
            written[i] = strdup(path);
            break;
        }
    return 1;
}

static int live_only(lua_State *L, int idx, const char *name, int tcp)
{
    int t = lua_getfield(L, idx, name);
    lua_pop(L, 1);
    if (t != LUA_TNIL && !tcp)
        return luaL_error(L,
                          "field '%s' applies to backend = \"tcp\" (live "
                          "mode) only",
                          name);
    return t != LUA_TNIL;
}

void bind_live_read(lua_State *L, int idx, int iterations, int warmup,
                    bind_live *out)
{
    memset(out, 0, sizeof *out);
    const char *b = bind_string(L, idx, "backend");
    if (b && strcmp(b, "tcp") == 0)
        out->tcp = 1;
    else if (b && strcmp(b, "sim") != 0)
        luaL_error(L,
                   "field 'backend': unknown backend '%s' (expected sim "
                   "or tcp)",
                   b);
    out->bytes_log = bind_string(L, idx, "bytes_log");
    if (!out->bytes_log)
        out->bytes_log = cli_bytes_log;
    if (out->bytes_log)
        bind_sandbox_db(L, out->bytes_log); /* where a database may go */
    long long it = iterations, wu = warmup;
    if (live_only(L, idx, "iterations", out->tcp))
        bind_int(L, idx, "iterations", 1, 1000000, &it);
    if (live_only(L, idx, "warmup", out->tcp))
        bind_int(L, idx, "warmup", 0, 1000000, &wu);
    out->iterations = (int)it;
    out->warmup = (int)wu;
    if (live_only(L, idx, "watchdog", out->tcp))
        bind_quantity_min(L, idx, "watchdog", UNIT_SECONDS, 0, 1,
                          &out->watchdog);
    if (live_only(L, idx, "inject", out->tcp)) {
        lua_getfield(L, idx, "inject");
        int t = lua_gettop(L);
        if (!lua_istable(L, t))
            luaL_error(L, "field 'inject' must be a table { latency = ..., "
                          "bandwidth = ... } (tests of the calibration)");
        static const char *const keys[] = {"latency", "bandwidth", NULL};
        bind_check_fields(L, t, "inject", keys);
        bind_quantity_in(L, t, "inject", "latency", UNIT_SECONDS, 0, 0,
                         &out->inject.latency);
        bind_quantity_in(L, t, "inject", "bandwidth", UNIT_BANDWIDTH, 0, 1,
                         &out->inject.bandwidth);
        lua_pop(L, 1);
    }
}

/* [-0, +0] t[k] = v, t on top */
static void set_number(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

void bind_live_push(lua_State *L, const live_result *r, double simulated,
                    const int32_t *ranks, int32_t n)
{
    lua_pushstring(L, "tcp");
    lua_setfield(L, -2, "backend");
    /* a rendezvous worker's copy of the scenario (live/rdv.c) gets the
     * same fields, NaN where the coordinator alone has the figure, so that
     * the script runs the same everywhere */
    lua_pushboolean(L, r->worker);
    lua_setfield(L, -2, "worker");
    set_number(L, "simulated", simulated);
    set_number(L, "clock_error", r->worker ? NAN : r->clock_error);
    lua_createtable(L, r->iterations, 0);
    for (int32_t k = 0; k < r->iterations; k++) {
        lua_pushnumber(L, r->times[k]);
        lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "times");
    lua_pushinteger(L, r->median_iter + 1);
    lua_setfield(L, -2, "median_iteration");
    static const char *const names[] = {"bytes_sent", "bytes_received",
                                        "header_bytes"};
    const double *v[] = {r->bytes_sent, r->bytes_recvd, r->header_bytes};
    for (int f = 0; f < 3; f++) {
        lua_createtable(L, n, 0);
        for (int32_t i = 0; i < n; i++) {
            lua_pushnumber(L, r->worker ? NAN : v[f][ranks ? ranks[i] : i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, names[f]);
    }
}

/* The log's order: iteration, then time, then rank. */
static int by_time(const void *a, const void *b)
{
    const rec_bytes_row *x = a, *y = b;
    if (x->iteration != y->iteration)
        return x->iteration < y->iteration ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    /* one rank's counters only grow: they order its messages of one
     * instant */
    double u = x->sent + x->received, v = y->sent + y->received;
    return (u > v) - (u < v);
}

static const char *kind_name(uint8_t kind)
{
    return kind == PROG_F ? "act" : kind == PROG_B ? "grad" : "coll";
}

int bind_live_bytes_log(lua_State *L, const bind_live *lv, rec_db *db,
                        int64_t id, int events, const live_result *r,
                        ps_err *err)
{
    (void)L;
    if (!lv->bytes_log || (r && r->worker)) /* the coordinator writes it */
        return PS_OK;
    int append = !first_write(lv->bytes_log), rc;
    if (r) {
        rec_bytes_row *rows = malloc(((size_t)r->ncounts + 1) * sizeof *rows);
        if (!rows)
            return ps_errf(err, "out of memory");
        for (int64_t k = 0; k < r->ncounts; k++) {
            const live_count *c = &r->counts[k];
            rows[k] = (rec_bytes_row){
                .run = id,
                .iteration = c->iteration,
                .rank = c->rank,
                .peer = c->peer,
                .msg = c->msg,
                .step = c->kind == PROG_COLL ? c->tag : -1,
                .mb = c->mb,
                .send = c->send,
                .kind = kind_name(c->kind),
                .bytes = c->bytes,
                .sent = c->sent,
                .received = c->recvd,
                .t = c->t,
            };
        }
        qsort(rows, (size_t)r->ncounts, sizeof *rows, by_time);
        rc = rec_bytes_log(lv->bytes_log, append, rows, r->ncounts, err);
        free(rows);
    } else {
        if (!db || id <= 0 || !events)
            return ps_errf(err, "field 'bytes_log' needs the run's transfers: "
                                "record = \"events\" (the default) or "
                                "backend = \"tcp\"");
        rc = rec_bytes_log_run(db, id, lv->bytes_log, append, err);
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* ps.run{ backend = "tcp", compute = {...} }                          */

#define PIPE_LIVE_TYPE "pipesim.pipe_live"

static int pipe_live_gc(lua_State *L)
{
    pipe_live_free(luaL_checkudata(L, 1, PIPE_LIVE_TYPE));
    return 0;
}

static const char *const compute_fields[] = {
    "dtype", "model", "samples", "seed", "width", "widths", NULL,
};

/* [-0, +0] compute.width or compute.widths into w (nlayers + 1). */
static void read_widths(lua_State *L, int t, int32_t nlayers, int32_t *w)
{
    long long width = 0;
    int has = bind_int(L, t, "width", 1, 1 << 16, &width);
    if (lua_getfield(L, t, "widths") != LUA_TNIL) {
        if (has)
            luaL_error(L, "field 'compute': give width or widths, not both");
        lua_Integer n = bind_list_len(L, -1, "compute.widths");
        if (n != nlayers + 1)
            luaL_error(L,
                       "field 'compute.widths' needs %d entries (the input "
                       "and each layer's output), got %d",
                       (int)nlayers + 1, (int)n);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_geti(L, -1, i);
            long long v;
            bind_check_int(L, lua_gettop(L), "compute.widths[i]", 1, 1 << 16,
                           &v);
            w[i - 1] = (int32_t)v;
            lua_pop(L, 1);
        }
    } else {
        for (int32_t i = 0; i <= nlayers; i++)
            w[i] = (int32_t)(has ? width : 64);
    }
    lua_pop(L, 1);
}

/* The layers as the simulated twin needs them to match the MLP: each
 * layer's params, the bytes it sends on and keeps (float64, `rows`
 * samples), from the model where the scenario left them out; a value
 * that disagrees is refused rather than simulated. */
static void fit_layers(lua_State *L, pipe_layer *l, int32_t n, const int32_t *w,
                       int32_t rows)
{
    for (int32_t i = 0; i < n; i++) {
        double params = (double)w[i + 1] * (w[i] + 1);
        double out = (double)rows * w[i + 1] * 8;
        if (l[i].params == 0)
            l[i].params = params;
        if (l[i].out_bytes == 0)
            l[i].out_bytes = out;
        if (l[i].act_bytes == 0)
            l[i].act_bytes = out;
        char why[256];
        if (l[i].params != params)
            snprintf(why, sizeof why,
                     "layer %d: params %.17g, the live MLP's layer has %.17g "
                     "(width %d -> %d with biases): leave params out",
                     (int)i + 1, l[i].params, params, (int)w[i], (int)w[i + 1]);
        else if (l[i].out_bytes != out)
            snprintf(why, sizeof why,
                     "layer %d: out_bytes %.17g, the live MLP sends %.17g "
                     "(%d samples x %d float64): leave out_bytes out",
                     (int)i + 1, l[i].out_bytes, out, (int)rows, (int)w[i + 1]);
        else
            continue;
        luaL_error(L, "%s", why);
    }
}

pipe_live *bind_live_pipe(lua_State *L, int idx, const bind_live *lv,
                          pipe_config *cfg)
{
    int32_t nlayers = cfg->nlayers;
    if (lua_getfield(L, idx, "compute") == LUA_TNIL) {
        lua_pop(L, 1);
        if (lv->tcp)
            luaL_error(L, "backend = \"tcp\" needs field 'compute' (the model "
                          "to run: { model = \"mlp\", width = 256, dtype = "
                          "\"float64\", seed = 1 })");
        lua_pushnil(L);
        return NULL;
    }
    if (!lv->tcp)
        luaL_error(L, "field 'compute' applies to backend = \"tcp\" (live "
                      "mode) only");
    int t = lua_gettop(L);
    if (!lua_istable(L, t))
        luaL_error(L, "field 'compute' must be a table { model = \"mlp\", "
                      "width = ..., dtype = \"float64\", seed = ... }");
    bind_check_fields(L, t, "compute", compute_fields);
    const char *model = bind_string_in(L, t, "compute", "model");
    if (!model || strcmp(model, "mlp") != 0)
        luaL_error(L, "field 'compute.model': live mode runs \"mlp\", got %s",
                   model ? model : "nothing");
    const char *dtype = bind_string_in(L, t, "compute", "dtype");
    if (dtype && strcmp(dtype, "float64") != 0)
        luaL_error(L,
                   "field 'compute.dtype': live mode computes in "
                   "\"float64\", got '%s'",
                   dtype);
    size_t lbytes = (size_t)nlayers * sizeof(pipe_layer);
    size_t wbytes = ((size_t)nlayers + 1) * sizeof(int32_t);
    pipe_live *pl = lua_newuserdatauv(L, sizeof *pl + lbytes + wbytes, 0);
    memset(pl, 0, sizeof *pl);
    static const luaL_Reg meta[] = {{"__gc", pipe_live_gc}, {NULL, NULL}};
    bind_setmetatable(L, PIPE_LIVE_TYPE, meta);
    pipe_layer *layers = (pipe_layer *)(pl + 1);
    int32_t *w = (int32_t *)(layers + nlayers);
    read_widths(L, t, nlayers, w);
    long long seed = 1, samples = 8;
    bind_integer(L, t, "seed", &seed);
    bind_int(L, t, "samples", 1, 1 << 20, &samples);
    memcpy(layers, cfg->layers, lbytes); /* a sweep's layers are shared */
    fit_layers(L, layers, nlayers, w, (int32_t)samples);
    cfg->layers = layers;
    /* the MLP's numbers are float64: the gradient sync's buckets are cut
     * in its bytes */
    cfg->grad_bytes = cfg->weight_bytes = 8;
    *pl = (pipe_live){.iterations = lv->iterations,
                      .warmup = lv->warmup,
                      .watchdog = lv->watchdog,
                      .width = w,
                      .nwidth = nlayers + 1,
                      .seed = (uint64_t)seed,
                      .rows = (int32_t)samples};
    lua_remove(L, t); /* the userdata stays, at the top */
    return pl;
}

/* [-0, +0] t[k] = array of n numbers */
static void set_array(lua_State *L, const char *k, const double *v, int32_t n)
{
    lua_createtable(L, n, 0);
    for (int32_t i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, k);
}

void bind_live_pipe_push(lua_State *L, const pipe_live *pl,
                         const int32_t *ranks, int32_t n)
{
    bind_live_push(L, &pl->run, pl->simulated, ranks, n);
    set_number(L, "grad_error", pl->grad_error);
    set_array(L, "held_activations", pl->held_peak, n);
    set_array(L, "recompute_time", pl->recompute, n);
}

/* ------------------------------------------------------------------ */
/* core.live_calibrate{...}                                            */

static const char *const calibrate_fields[] = {
    "compute", "concurrent", "inject", "iterations", "layers", "pattern",
    "ranks",   "reps",       "sizes",  "statistic",  "warmup", NULL,
};

/* [-0, +0] field name of the table at idx: a list of byte quantities. */
static int read_sizes(lua_State *L, int idx, double *out, int max)
{
    if (lua_getfield(L, idx, "sizes") == LUA_TNIL) {
        lua_pop(L, 1);
        static const double def[] = {0,      1024,   16384,  65536,
                                     262144, 524288, 1048576};
        int n = (int)(sizeof def / sizeof def[0]);
        memcpy(out, def, sizeof def);
        return n;
    }
    lua_Integer n = bind_list_len(L, -1, "sizes");
    if (n < 2 || n > max)
        luaL_error(L, "field 'sizes' needs 2 to %d sizes, got %d", max, (int)n);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, -1, i);
        ps_err err;
        if (bind_parse_quantity(L, lua_gettop(L), UNIT_BYTES, &out[i - 1],
                                &err))
            luaL_error(L, "field 'sizes[%d]': %s", (int)i, err.msg);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return (int)n;
}

/* [-0, +1] pushes an array of n numbers */
static void push_numbers(lua_State *L, const double *v, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

/* [-0, +1] core.live_calibrate(spec): the ping-pong's (or with pattern =
 * "exchange", the exchange's) sizes and one-way times with their fit
 * (latency, bandwidth), and with layers = N the MLP's per-layer fwd, bwd
 * (B) and wgt (W) seconds, timed beside concurrent - 1 processes running
 * the same kernels. */
static int core_live_calibrate(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    bind_check_fields(L, 1, "", calibrate_fields);
    double sizes[64], secs[64];
    int n = read_sizes(L, 1, sizes, 64);
    long long it = 5, wu = 1, reps = 10, nl = 0;
    bind_int(L, 1, "iterations", 1, 100000, &it);
    bind_int(L, 1, "warmup", 0, 100000, &wu);
    bind_int(L, 1, "reps", 1, 100000, &reps);
    bind_int(L, 1, "layers", 0, 4096, &nl);
    bind_live lv = {.tcp = 1};
    if (lua_getfield(L, 1, "inject") != LUA_TNIL) {
        int t = lua_gettop(L);
        static const char *const keys[] = {"latency", "bandwidth", NULL};
        if (!lua_istable(L, t))
            luaL_error(L, "field 'inject' must be a table");
        bind_check_fields(L, t, "inject", keys);
        bind_quantity_in(L, t, "inject", "latency", UNIT_SECONDS, 0, 0,
                         &lv.inject.latency);
        bind_quantity_in(L, t, "inject", "bandwidth", UNIT_BANDWIDTH, 0, 1,
                         &lv.inject.bandwidth);
    }
    lua_pop(L, 1);
    long long ranks = 2;
    bind_int(L, 1, "ranks", 2, 1024, &ranks);
    const char *stat = bind_string(L, 1, "statistic");
    if (stat && strcmp(stat, "min") != 0 && strcmp(stat, "median") != 0)
        return luaL_error(L, "field 'statistic': '%s' (expected min or median)",
                          stat);
    const char *pat = bind_string(L, 1, "pattern");
    if (pat && strcmp(pat, "pingpong") != 0 && strcmp(pat, "exchange") != 0)
        return luaL_error(L,
                          "field 'pattern': '%s' (expected pingpong or "
                          "exchange)",
                          pat);
    long long conc = 1;
    bind_int(L, 1, "concurrent", 1, 1024, &conc);
    live_pp pp = {sizes,
                  n,
                  (int)it,
                  (int)wu,
                  (int)reps,
                  lv.inject,
                  (int32_t)ranks,
                  stat && strcmp(stat, "median") == 0,
                  pat && strcmp(pat, "exchange") == 0};
    ps_err err;
    if (live_pingpong(&pp, secs, &err))
        return bind_raise(L, &err);
    double lat = 0, bw = 0;
    if (live_fit(sizes, secs, n, &lat, &bw))
        return luaL_error(L, "field 'sizes': the fit needs two different "
                             "sizes");
    lua_createtable(L, 0, 8);
    push_numbers(L, sizes, n);
    lua_setfield(L, -2, "sizes");
    push_numbers(L, secs, n);
    lua_setfield(L, -2, "one_way");
    set_number(L, "latency", lat);
    set_number(L, "bandwidth", bw);
    if (nl > 0) { /* the model's layers, as ps.run's compute reads them */
        pipe_config cfg;
        pipe_config_init(&cfg);
        pipe_layer *l = lua_newuserdatauv(L, (size_t)nl * sizeof *l, 0);
        for (long long i = 0; i < nl; i++)
            pipe_layer_init(&l[i]);
        cfg.layers = l;
        cfg.nlayers = (int32_t)nl;
        bind_live flag = {.tcp = 1};
        pipe_live *pl = bind_live_pipe(L, 1, &flag, &cfg);
        double *t = lua_newuserdatauv(L, 3 * (size_t)nl * sizeof *t, 0);
        mlp m = {(int32_t)nl, pl->width, pl->seed, pl->rows};
        if (live_profile_mlp(&m, (int)reps, (int)conc, t, t + nl, t + 2 * nl,
                             &err))
            return bind_raise(L, &err);
        lua_pop(L, 3); /* t, pl, l */
        push_numbers(L, t, (int)nl);
        lua_setfield(L, -2, "fwd");
        push_numbers(L, t + nl, (int)nl);
        lua_setfield(L, -2, "bwd");
        push_numbers(L, t + 2 * nl, (int)nl);
        lua_setfield(L, -2, "wgt");
    }
    return 1;
}

/* [-0, +2] core.live_fit(sizes, times): live_fit's latency and bandwidth
 * (the 1/t^2-weighted least squares of the ping-pong), for points that
 * ps.calibrate measured in several runs while it grew its sizes. */
static int core_live_fit(lua_State *L)
{
    double x[64], t[64];
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 1);
    if (n < 2 || n > 64 || luaL_len(L, 2) != n)
        return luaL_error(L, "live_fit: 2 to 64 sizes and as many times");
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, 1, i);
        lua_geti(L, 2, i);
        x[i - 1] = luaL_checknumber(L, -2);
        t[i - 1] = luaL_checknumber(L, -1);
        lua_pop(L, 2);
    }
    double lat = 0, bw = 0;
    if (live_fit(x, t, (int)n, &lat, &bw))
        return luaL_error(L, "field 'sizes': the fit needs two different "
                             "sizes");
    lua_pushnumber(L, lat);
    lua_pushnumber(L, bw);
    return 2;
}

const luaL_Reg bind_live_funcs[] = {
    {"live_calibrate", core_live_calibrate},
    {"live_fit", core_live_fit},
    {NULL, NULL},
};
