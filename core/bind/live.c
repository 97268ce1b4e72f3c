/* Live mode's side of the binding (live/live.h): the fields that choose
 * and tune it (backend, iterations, warmup, watchdog, inject), the result
 * fields it adds (times, simulated, bytes_received), and bytes_log, the
 * JSON Lines byte counters of any backend (rec_bytes_log). ps.collective
 * and ps.run call these from bind/collective.c and bind/run.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/unit.h"
#include "bind/bind.h"
#include "bind/live.h"

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
        return luaL_error(L, "field '%s' applies to backend = \"tcp\" (live "
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
        luaL_error(L, "field 'backend': unknown backend '%s' (expected sim "
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
    set_number(L, "simulated", simulated);
    set_number(L, "clock_error", r->clock_error);
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
            lua_pushnumber(L, v[f][ranks ? ranks[i] : i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, names[f]);
    }
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
    if (!lv->bytes_log)
        return PS_OK;
    int append = !first_write(lv->bytes_log), rc;
    if (r) {
        rec_bytes_row *rows =
            malloc(((size_t)r->ncounts + 1) * sizeof *rows);
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
