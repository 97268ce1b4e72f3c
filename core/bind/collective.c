/* core.collective: one collective (coll_run) on a cluster, recorded as a run
 * of kind 'collective'. Every field is checked here (core/bind/check.c,
 * lists in core/bind/fields.c); then init.lua's params_json function builds
 * the JSON of the inputs. The engine and program set live in the registry and
 * are reused by every run; the coll_result lives in a userdata whose __gc
 * frees it, so an error raised while the result table is built leaks
 * nothing. A data function is called through a trampoline that runs it
 * under lua_pcall: coll_run is never longjmp'ed through. */
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/limit.h"
#include "base/unit.h"
#include "bind/bind.h"
#include "bind/cluster.h"
#include "bind/live.h"
#include "coll/coll.h"
#include "rec/rec.h"
#include "run/sink.h"

#define CTX_KEY "pipesim.coll_ctx.instance" /* registry slot of the one ctx */
#define RES_TYPE "pipesim.coll_result"

/* Outputs come back to Lua up to this many elements per rank. */
#define MAX_LUA_OUTPUTS 65536

static void *ctx_make(void)
{
    return coll_ctx_new();
}

static void ctx_drop(void *ctx)
{
    coll_ctx_free(ctx);
}

/* [-0, +0] */
static int res_gc(lua_State *L)
{
    coll_result_free(luaL_checkudata(L, 1, RES_TYPE));
    return 0;
}

/* ------------------------------------------------------------------ */
/* The data function                                                   */

typedef struct data_ctx {
    lua_State *L;
    int fn;       /* stack index of the Lua function */
    int failed;   /* 1: msg holds the error; 2: the error is on the stack */
    int err_idx;  /* failed == 2: its stack index */
    int32_t rank; /* of the failing call */
    long long i;
    char msg[160];
} data_ctx;

/* [-0, +(0|1)] COLL_DATA_FN callback. After the first failure it returns 0
 * without calling Lua; the caller raises the error once coll_run has returned.
 */
static double data_trampoline(void *vctx, int32_t rank, int64_t i)
{
    data_ctx *c = vctx;
    if (c->failed)
        return 0;
    lua_State *L = c->L;
    lua_pushvalue(L, c->fn);
    lua_pushinteger(L, rank);
    lua_pushinteger(L, (lua_Integer)i);
    c->rank = rank;
    c->i = (long long)i;
    if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
        c->failed = 2; /* keep the error object on the stack */
        c->err_idx = lua_gettop(L);
        return 0;
    }
    int isnum;
    double v = lua_tonumberx(L, -1, &isnum);
    if (!isnum) {
        c->failed = 1;
        snprintf(c->msg, sizeof c->msg, "returned a %s, expected a number",
                 luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    return isnum ? v : 0;
}

/* coll_rec.data_error: the trampoline's failure as the run's error. The
 * Lua error object stays on the stack (at err_idx) until core_collective
 * returns. */
static int data_error(void *vctx, ps_err *err)
{
    data_ctx *c = vctx;
    if (c->failed == 2)
        return ps_errf(err, "field 'data': data(%d, %d) failed: %s",
                       (int)c->rank, (int)c->i,
                       luaL_tolstring(c->L, c->err_idx, NULL));
    if (c->failed == 1)
        return ps_errf(err, "field 'data': data(%d, %d) %s", (int)c->rank,
                       (int)c->i, c->msg);
    return PS_OK;
}

/* ------------------------------------------------------------------ */
/* Fields                                                              */

/* [-0, +1] The listed ranks into a userdata array left on the stack; NULL (and
 * *n = 0) when the field is absent. */
static int32_t *read_ranks(lua_State *L, int32_t *n)
{
    *n = 0;
    if (!bind_table(L, 1, "ranks", "of cluster ranks such as { 0, 1, 2, 3 }"))
        return NULL;
    lua_Integer len = bind_list_len(L, -1, "ranks");
    if (len < 1)
        luaL_error(L, "field 'ranks' is empty");
    if (len > 1 << 24)
        luaL_error(L, "field 'ranks' is too long");
    int32_t *r = lua_newuserdatauv(L, (size_t)len * sizeof *r, 0);
    lua_rotate(L, -2, 1); /* keep the array below the list */
    for (lua_Integer i = 1; i <= len; i++) {
        lua_geti(L, -1, i);
        long long v;
        int at = lua_gettop(L);
        /* membership in the cluster is coll_run's check, with its message */
        bind_check_int(L, at, lua_pushfstring(L, "ranks[%d]", (int)i), 0,
                       INT32_MAX, &v);
        r[i - 1] = (int32_t)v;
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
    *n = (int32_t)len;
    return r;
}

/* [-0, +0] Auto's candidates: "all" (0), a list of names, or (nil) coll's
 * default. *named: 1 when the field is given. */
static unsigned read_candidates(lua_State *L, enum coll_op op, int algo,
                                int *named)
{
    int t = lua_getfield(L, 1, "candidates");
    unsigned mask = 0;
    *named = t != LUA_TNIL;
    if (t == LUA_TNIL) {
        mask = coll_default_candidates(op);
    } else if (algo != COLL_AUTO) {
        luaL_error(L, "field 'candidates' only applies to algorithm = "
                      "\"auto\"");
    } else if (t == LUA_TSTRING && strcmp(lua_tostring(L, -1), "all") == 0) {
        mask = 0;
    } else if (t == LUA_TTABLE) {
        lua_Integer len = bind_list_len(L, -1, "candidates");
        if (len < 1)
            luaL_error(L, "field 'candidates' is empty");
        for (lua_Integer i = 1; i <= len; i++) {
            lua_geti(L, -1, i);
            const char *name =
                lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
            int a = COLL_AUTO;
            ps_err err;
            if (!name || coll_parse_algo(op, name, &a, &err))
                luaL_error(L, "field 'candidates': %s",
                           name ? err.msg : "entries must be names");
            if (a == COLL_AUTO)
                luaL_error(L, "field 'candidates': 'auto' is not an "
                              "algorithm");
            mask |= 1u << a;
            lua_pop(L, 1);
        }
    } else {
        luaL_error(L, "field 'candidates' must be \"all\" or a list of "
                      "algorithm names");
    }
    lua_pop(L, 1);
    return mask;
}

/* ------------------------------------------------------------------ */
/* Result                                                              */

/* [-0, +0] t[k] = v, t on top */
static void set_number(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

/* [-0, +0] t[k] = v, t on top */
static void set_integer(lua_State *L, const char *k, long long v)
{
    lua_pushinteger(L, (lua_Integer)v);
    lua_setfield(L, -2, k);
}

/* [-0, +1] pushes the result table */
static void push_result(lua_State *L, const coll_result *res, const char *op,
                        const char *name, int64_t id, int64_t bytes,
                        int outputs)
{
    lua_createtable(L, 0, 20);
    if (id > 0)
        set_integer(L, "id", id);
    lua_pushstring(L, name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, op);
    lua_setfield(L, -2, "op");
    lua_pushstring(L, coll_algo_name(res->algorithm));
    lua_setfield(L, -2, "algorithm");
    lua_pushstring(L, coll_proto_name(res->protocol));
    lua_setfield(L, -2, "protocol");
    set_integer(L, "bytes", bytes);
    set_integer(L, "ranks", res->nranks);
    set_number(L, "time", res->time);
    set_number(L, "predicted", res->predicted);
    set_number(L, "algbw", res->algbw);
    set_number(L, "busbw", res->busbw);
    set_integer(L, "chunks", res->chunks);
    set_integer(L, "channels", res->channels);
    set_integer(L, "slots", res->slots);
    set_integer(L, "transfers", res->transfers);
    set_integer(L, "steps", res->steps);
    lua_createtable(L, res->nranks, 0);
    for (int32_t i = 0; i < res->nranks; i++) {
        lua_pushnumber(L, res->bytes_sent[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "bytes_sent");
    if (res->outputs) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "verified");
    }
    if (res->outputs && outputs) {
        lua_createtable(L, res->nranks, 0);
        for (int32_t i = 0; i < res->nranks; i++) {
            int64_t n = res->out_count[i];
            lua_createtable(L, (int)n, 0);
            for (int64_t e = 0; e < n; e++) {
                lua_pushnumber(L, (double)res->outputs[i][e]);
                lua_rawseti(L, -2, (lua_Integer)e + 1);
            }
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "outputs");
    }
}

/* ------------------------------------------------------------------ */
/* core.collective                                                     */

/* [-0, +1] simulate = false: auto's choice and the cost model's time
 * (coll_choose) without running the collective, for scans over sizes.
 * Nothing runs, so nothing is recorded and no data moves: the fields that
 * ask for either are refused rather than ignored. */
static int predict_only(lua_State *L, const coll_spec *spec, const net *nw)
{
    static const char *const refused[] = {"data", "verify", "faults",
                                          "recv_timeout", NULL};
    for (int i = 0; refused[i]; i++) {
        int t = lua_getfield(L, 1, refused[i]);
        if (t != LUA_TNIL && (t != LUA_TBOOLEAN || lua_toboolean(L, -1)))
            return luaL_error(L,
                              "field '%s' needs a simulated collective; "
                              "simulate = false only predicts",
                              refused[i]);
        lua_pop(L, 1);
    }
    const char *r = bind_string(L, 1, "record");
    if (r && strcmp(r, "none") != 0)
        return luaL_error(L,
                          "field 'record': '%s' records a run, and simulate "
                          "= false runs nothing (drop it or use \"none\")",
                          r);
    coll_result res;
    ps_err err;
    if (coll_choose(spec, nw, &res, &err))
        return bind_raise(L, &err);
    const char *name = bind_string(L, 1, "name");
    char buf[64];
    if (!name) {
        snprintf(buf, sizeof buf, "%s %s", coll_op_name(spec->op),
                 coll_algo_name(res.algorithm));
        name = buf;
    }
    lua_createtable(L, 0, 12);
    lua_pushstring(L, name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, coll_op_name(spec->op));
    lua_setfield(L, -2, "op");
    lua_pushstring(L, coll_algo_name(res.algorithm));
    lua_setfield(L, -2, "algorithm");
    lua_pushstring(L, coll_proto_name(res.protocol));
    lua_setfield(L, -2, "protocol");
    set_integer(L, "bytes", spec->bytes);
    set_integer(L, "ranks", res.nranks);
    set_number(L, "predicted", res.predicted);
    set_integer(L, "chunks", res.chunks);
    set_integer(L, "channels", res.channels);
    set_integer(L, "slots", res.slots);
    return 1;
}

/* [-0, +0] The operation, its algorithm (or auto's candidates) and the
 * protocol: NCCL's default on its clusters, none on textbook links.
 * Raises on a bad value. */
static int read_op(lua_State *L, const bind_cluster *cl, coll_spec *spec)
{
    ps_err err;
    const char *opn = bind_string(L, 1, "op");
    if (!opn)
        return luaL_error(L, "missing field 'op' (allreduce, "
                             "reduce_scatter, allgather, broadcast, reduce, "
                             "alltoall, sendrecv)");
    if (coll_parse_op(opn, &spec->op, &err))
        return bind_raise(L, &err);
    const char *algn = bind_string(L, 1, "algorithm");
    if (coll_parse_algo(spec->op, algn ? algn : "auto", &spec->algorithm, &err))
        return bind_raise(L, &err);
    int named = 0;
    spec->candidates = read_candidates(L, spec->op, spec->algorithm, &named);
    const char *proton = bind_string(L, 1, "protocol");
    if (proton && coll_parse_proto(proton, &spec->protocol, &err))
        return luaL_error(L, "field 'protocol': %s", err.msg);
    if (!proton)
        spec->protocol = coll_default_protocol(
            spec->op, spec->algorithm,
            named ? (spec->candidates ? spec->candidates : ~0u) : 0, &cl->hw);
    return 0;
}

/* [-0, +0] bytes: required, a whole number of bytes (a quantity such as
 * "256 MB"). */
static int read_bytes(lua_State *L, coll_spec *spec)
{
    if (lua_getfield(L, 1, "bytes") == LUA_TNIL)
        return luaL_error(L, "missing field 'bytes' (the whole array, e.g. "
                             "\"256 MB\")");
    lua_pop(L, 1);
    double bytes = 0;
    bind_quantity(L, 1, "bytes", UNIT_BYTES, &bytes);
    if (bytes != floor(bytes) || fabs(bytes) > 0x1p62) {
        char num[32];
        snprintf(num, sizeof num, "%g", bytes);
        return luaL_error(L,
                          "field 'bytes' must be a whole number of bytes, "
                          "got %s",
                          num);
    }
    spec->bytes = (int64_t)bytes;
    return 0;
}

/* [-0, +0] Who takes part and how it is cut: ranks, root, chunks,
 * ranks_per_node (the cluster's nodes by default), slots, p2p. Integers
 * are read in 64 bits before narrowing; whether root is among the ranks
 * is coll_run's check. */
static void read_ranks_and_cuts(lua_State *L, const bind_cluster *cl,
                                coll_spec *spec)
{
    int32_t nranks = 0;
    int32_t *ranks = read_ranks(L, &nranks);
    spec->ranks = ranks;
    spec->nranks = nranks;
    long long root = ranks ? ranks[0] : 0, chunks = 0, rpn = -1;
    bind_int(L, 1, "root", 0, INT32_MAX, &root);
    bind_int(L, 1, "chunks", 1, 1 << 20, &chunks);
    bind_int(L, 1, "ranks_per_node", 1, 1 << 20, &rpn);
    long long slots = 0;
    bind_int(L, 1, "slots", 1, COLL_NCCL_STEPS, &slots);
    spec->slots = (int32_t)slots;
    spec->root = (int32_t)root;
    spec->chunks = (int32_t)chunks;
    spec->ranks_per_node =
        rpn > 0 ? (int32_t)rpn
                : coll_ranks_per_node(cl->gpus_per_node, ranks, nranks);
    spec->hw = cl->hw;
    spec->p2p = bind_p2p(L, 1, NULL);
}

/* [-0, +(0|1)] Data mode: a data function (left on the stack, where dc
 * finds it while the collective runs), or random data with verify, or
 * none (nothing left pushed); the seed. */
static int read_data(lua_State *L, coll_spec *spec, coll_rec *rc, data_ctx *dc)
{
    int verify = 0;
    long long seed = 1;
    bind_boolean(L, 1, "verify", &verify);
    bind_integer(L, 1, "seed", &seed);
    if (lua_getfield(L, 1, "data") != LUA_TNIL) {
        if (!lua_isfunction(L, -1))
            return luaL_error(L,
                              "field 'data' must be a function (rank, i) "
                              "returning the input value, got a %s",
                              luaL_typename(L, -1));
        dc->L = L;
        dc->fn = lua_gettop(L);
        spec->data = COLL_DATA_FN;
        spec->data_fn = data_trampoline;
        spec->data_ctx = dc;
        rc->data_error = data_error;
    } else {
        lua_pop(L, 1);
        if (verify)
            spec->data = COLL_DATA_RANDOM;
    }
    spec->seed = (uint64_t)seed;
    return 0;
}

/* [-0, +1] Runs and records the read spec through coll_exec into db
 * (rc->sink's; live with lv's settings when its backend is tcp) and
 * pushes the result table. */
static int run_collective(lua_State *L, bind_cluster *cl, coll_spec *spec,
                          coll_rec *rc, rec_db *db, const bind_live *lv,
                          int recording)
{
    ps_err err;
    coll_live live = {.iterations = lv->iterations,
                      .warmup = lv->warmup,
                      .watchdog = lv->watchdog,
                      .inject = lv->inject};
    if (lv->tcp) {
        rc->live = &live;
        spec->stream = 0;
    }
    coll_ctx *ctx = bind_context(L, CTX_KEY, ctx_make, ctx_drop);
    coll_result *res = lua_newuserdatauv(L, sizeof *res, 0);
    memset(res, 0, sizeof *res);
    static const luaL_Reg meta[] = {{"__gc", res_gc}, {NULL, NULL}};
    bind_setmetatable(L, RES_TYPE, meta);
    luaL_checkstack(L, 8, "data function");

    int status = coll_exec(ctx, spec, cl->nw, rc, res, &err);
    bind_progress(L);
    if (rc->id > 0)
        bind_count_run(L);
    if (status == PS_OK)
        status = bind_live_bytes_log(L, lv, db, rc->id,
                                     recording && rc->level == REC_EVENTS,
                                     lv->tcp ? &live.run : NULL, &err);
    if (status) {
        coll_live_free(&live);
        return bind_raise(L, &err);
    }
    int64_t n = spec->bytes / 4;
    push_result(L, res, coll_op_name(spec->op), rc->used_name, rc->id,
                spec->bytes,
                spec->data == COLL_DATA_FN && n <= MAX_LUA_OUTPUTS);
    if (lv->tcp) {
        bind_live_push(L, &live.run, live.simulated, spec->ranks, res->nranks);
        coll_live_free(&live);
    }
    coll_result_free(res); /* early; __gc finds it freed */
    return 1;
}

/* [-0, +1] core.collective(spec): reads spec into a coll_spec and a
 * coll_rec, runs and records it through coll_exec, pushes the result
 * table. */
static int core_collective(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    bind_check_fields(L, 1, "", bind_fields_collective);
    coll_spec spec = {0};

    if (lua_getfield(L, 1, "cluster") == LUA_TNIL)
        return luaL_error(L, "missing field 'cluster' (a ps.cluster)");
    bind_cluster *cl = bind_check_cluster(L, -1);
    /* the cluster stays on the stack (and alive) until we return */
    read_op(L, cl, &spec);
    read_bytes(L, &spec);
    read_ranks_and_cuts(L, cl, &spec);
    coll_rec rc = {0};
    int simulate = 1;
    bind_boolean(L, 1, "simulate", &simulate);
    bind_live lv; /* live mode (bind/live.c); nccl-tests' -n 20 -w 5 */
    bind_live_read(L, 1, 20, 5, &lv);
    /* live mode runs the algorithm's own transfers: a cluster's NCCL
     * default protocol does not apply (one given is refused, coll/live.c) */
    if (lv.tcp && !bind_string(L, 1, "protocol"))
        spec.protocol = COLL_PROTO_NONE;
    if (!simulate && (lv.tcp || lv.bytes_log))
        return luaL_error(L,
                          "field '%s' needs a collective that runs; "
                          "simulate = false only predicts",
                          lv.tcp ? "backend" : "bytes_log");
    if (!simulate)
        return predict_only(L, &spec, cl->nw);
    int recording = bind_record(L, 1, &rc.level);
    /* only event rows read the programs back */
    spec.stream = !recording || rc.level != REC_EVENTS;
    data_ctx dc = {0};
    read_data(L, &spec, &rc, &dc);
    spec.faults = bind_faults(L, 1, cl->nranks, 0);
    rc.name = bind_string(L, 1, "name");
    rc.params_json = bind_params_json(L, 1);
    bind_meta(L, 1, &rc.meta);
    rec_db *db = recording ? bind_database(L, bind_string(L, 1, "db")) : NULL;
    rec_sink sink;
    rc.sink = run_sink_db(&sink, db);
    return run_collective(L, cl, &spec, &rc, db, &lv, recording);
}

const luaL_Reg bind_collective_funcs[] = {
    {"collective", core_collective},
    {NULL, NULL},
};
