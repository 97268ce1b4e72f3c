/* core.run: one pipeline training step from a normalized scenario table
 * (lua/pipesim/init.lua fills defaults). Every field is checked here
 * (core/bind/check.c, lists in core/bind/fields.c) before the Lua layer is
 * asked for the partition and the params JSON, so those see valid input.
 * Scratch arrays are Lua userdata, so an error raised half way leaks
 * nothing; the pipe_ctx lives in the registry and is reused by every run.
 * The layout's sizes and the layers (the layer reader, the sealed layers
 * and the checked-layers hand-off, for both core.check_run and core.run)
 * are read here; the step's options (schedule, placement, overlap,
 * memory, partition, gradient sync) in bind/run_opts.c. */
#include <lauxlib.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/unit.h"
#include "bind/bind.h"
#include "bind/cluster.h"
#include "bind/live.h"
#include "bind/run_opts.h"
#include "coll/coll.h"
#include "par/dp.h"
#include "par/layout.h"
#include "run/sink.h"
#include "step/pipe.h"

#define MAX_RANKS PAR_MAX_RANKS /* as in ps.cluster (net/net.h) */
#define MAX_LAYERS BIND_MAX_LAYERS
#define CTX_KEY "pipesim.pipe_ctx.instance" /* registry slot of the ctx */

static void *ctx_make(void)
{
    return pipe_ctx_new();
}

static void ctx_drop(void *ctx)
{
    pipe_ctx_free(ctx);
}

/* The numeric layer fields the core reads, each a finite number >= 0
 * (units allowed) into its pipe_layer slot; def when absent. Every key here
 * is in bind_fields_layer (bind_check_layer_fields checks that at
 * start-up);
 * that list also holds fields the core accepts without reading (kind,
 * shape: the model's). */
static const struct layer_num {
    const char *key;
    size_t off;
    enum unit_kind kind;
    double def;
} layer_nums[] = {
    {"fwd_flops", offsetof(pipe_layer, fwd_flops), UNIT_FLOP, -1},
    {"fwd_time", offsetof(pipe_layer, fwd_time), UNIT_SECONDS, -1},
    {"params", offsetof(pipe_layer, params), UNIT_FLOP, 0},
    {"act_bytes", offsetof(pipe_layer, act_bytes), UNIT_BYTES, 0},
    {"out_bytes", offsetof(pipe_layer, out_bytes), UNIT_BYTES, 0},
    {"bwd_flops", offsetof(pipe_layer, bwd_flops), UNIT_FLOP, -1},
    {"bwd_time", offsetof(pipe_layer, bwd_time), UNIT_SECONDS, -1},
    {"in_bytes", offsetof(pipe_layer, in_bytes), UNIT_BYTES, -1},
    {"bwd_input_flops", offsetof(pipe_layer, bwd_input_flops), UNIT_FLOP, -1},
    {"bwd_weight_flops", offsetof(pipe_layer, bwd_weight_flops), UNIT_FLOP, -1},
    {"bwd_input_time", offsetof(pipe_layer, bwd_input_time), UNIT_SECONDS, -1},
    {"bwd_weight_time", offsetof(pipe_layer, bwd_weight_time), UNIT_SECONDS,
     -1},
    {"bwd_weight_bytes", offsetof(pipe_layer, bwd_weight_bytes), UNIT_BYTES,
     -1},
    {"recompute_time", offsetof(pipe_layer, recompute_time), UNIT_SECONDS, -1},
    {"kept_bytes", offsetof(pipe_layer, kept_bytes), UNIT_BYTES, -1},
    {"static_bytes", offsetof(pipe_layer, static_bytes), UNIT_BYTES, 0},
    {"work_bytes", offsetof(pipe_layer, work_bytes), UNIT_BYTES, 0},
    {"tp_comm_time", offsetof(pipe_layer, tp_comm_time), UNIT_SECONDS, -1},
    {"tp_exposed_time", offsetof(pipe_layer, tp_exposed_time), UNIT_SECONDS,
     -1},
    {"shared_params", offsetof(pipe_layer, shared_params), UNIT_FLOP, -1},
    /* a MoE layer under expert parallelism (step/pipe.h, par/ep.h):
     * written by lua/pipesim/expert.lua from moe.block_cost, or by hand */
    {"moe_dispatch_bytes", offsetof(pipe_layer, moe_dispatch_bytes), UNIT_BYTES,
     0},
    {"moe_combine_bytes", offsetof(pipe_layer, moe_combine_bytes), UNIT_BYTES,
     0},
    {"moe_dispatch_grad_bytes", offsetof(pipe_layer, moe_dispatch_grad_bytes),
     UNIT_BYTES, -1},
    {"moe_combine_grad_bytes", offsetof(pipe_layer, moe_combine_grad_bytes),
     UNIT_BYTES, -1},
    {"moe_fwd_pre_time", offsetof(pipe_layer, moe_fwd_pre_time), UNIT_SECONDS,
     0},
    {"moe_fwd_expert_time", offsetof(pipe_layer, moe_fwd_expert_time),
     UNIT_SECONDS, 0},
    {"moe_bwd_pre_time", offsetof(pipe_layer, moe_bwd_pre_time), UNIT_SECONDS,
     0},
    {"moe_bwd_expert_time", offsetof(pipe_layer, moe_bwd_expert_time),
     UNIT_SECONDS, 0},
    {"moe_expert_params", offsetof(pipe_layer, moe_expert_params), UNIT_FLOP,
     0},
    /* the flex dispatcher's per-peer shares (lua/pipesim/expert.lua) */
    {"moe_flex_nvl_share", offsetof(pipe_layer, moe_flex_nvl_share), UNIT_RATIO,
     0},
    {"moe_flex_rdma_share", offsetof(pipe_layer, moe_flex_rdma_share),
     UNIT_RATIO, 0},
};
#define NLAYER_NUMS (sizeof layer_nums / sizeof layer_nums[0])

/* Codes of the non-numeric layer keys in the key map (numeric ones map to
 * their layer_nums index from 1). */
enum { KEY_NAME = -1, KEY_KIND = -2, KEY_SHAPE = -3, KEY_MOE = -4 };

/* [-0, +1] The layer keys as a table { key = code }, built once and kept
 * in the registry under layer_nums' address: a layer's keys then cost one
 * hash lookup each instead of a strcmp against every name (a sweep reads
 * every layer of every run). */
static int layer_key_map(lua_State *L)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, layer_nums) == LUA_TTABLE)
        return lua_gettop(L);
    lua_pop(L, 1);
    lua_newtable(L);
    for (size_t f = 0; f < NLAYER_NUMS; f++) {
        lua_pushinteger(L, (lua_Integer)f + 1);
        lua_setfield(L, -2, layer_nums[f].key);
    }
    static const struct {
        const char *key;
        int code;
    } other[] = {{"name", KEY_NAME},
                 {"kind", KEY_KIND},
                 {"shape", KEY_SHAPE},
                 {"moe", KEY_MOE}};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        lua_pushinteger(L, other[i].code);
        lua_setfield(L, -2, other[i].key);
    }
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, layer_nums);
    return lua_gettop(L);
}

/* [-0, +0] Reads layers[i] (the table at idx) in one pass over its keys: a
 * sweep reads every layer of every run, and most fields are absent. map is
 * the stack index of layer_key_map's table. */
static void read_layer(lua_State *L, int idx, int i, pipe_layer *l, int map)
{
    /* "layers[i]" by hand: snprintf costs more than the rest of a layer */
    char path[32] = "layers[", digits[16];
    int nd = 0;
    for (unsigned u = (unsigned)i; u || !nd; u /= 10)
        digits[nd++] = (char)('0' + u % 10);
    size_t at = 7;
    while (nd)
        path[at++] = digits[--nd];
    path[at++] = ']';
    path[at] = 0;
    if (!lua_istable(L, idx))
        bind_field_error(L, path, "must be a table", idx);
    char *base = (char *)l;
    for (size_t f = 0; f < NLAYER_NUMS; f++)
        if (layer_nums[f].off != (size_t)-1)
            *(double *)(base + layer_nums[f].off) = layer_nums[f].def;
    l->name = NULL;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_Integer code = 0;
        if (lua_type(L, -2) == LUA_TSTRING) {
            lua_pushvalue(L, -2);
            lua_rawget(L, map);
            code = lua_tointeger(L, -1); /* 0: not a layer key */
            lua_pop(L, 1);
        }
        const char *k = code ? lua_tostring(L, -2) : NULL;
        if (code > 0) {
            size_t f = (size_t)code - 1;
            double v = 0;
            /* every figure is >= 0 but static_bytes, negative where FP8
             * parameters weigh less than weight_bytes (step/pipe.h) */
            double lo = layer_nums[f].off == offsetof(pipe_layer, static_bytes)
                            ? -HUGE_VAL
                            : 0;
            bind_quantity_top(L, path, k, layer_nums[f].kind, lo, 0, &v);
            if (layer_nums[f].off != (size_t)-1)
                *(double *)(base + layer_nums[f].off) = v;
            lua_pop(L, 1);
            continue;
        }
        lua_pop(L, 1);
        if (code == KEY_NAME)
            l->name = bind_string_in(L, idx, path, "name");
        else if (code == KEY_KIND)
            bind_string_in(L, idx, path, "kind");
        else if (code == KEY_MOE) {
            /* the model's mark of a MoE block (MOE_INTERFACE.md), lowered
             * by lua/pipesim/expert.lua into the moe_* fields */
            int moe = 0;
            bind_boolean(L, idx, "moe", &moe);
        } else if (code != KEY_SHAPE)
            bind_check_fields(L, idx, path, bind_fields_layer); /* raises */
    }
    if (l->fwd_time < 0 && l->fwd_flops < 0)
        luaL_error(L, "%s: missing field 'fwd_flops' or 'fwd_time'", path);
}

/* [-0, +0] p x v stages need at least as many layers (p <= 2^20 and v < 2^15:
 * the product fits before it is compared). */
static void check_stage_count(lua_State *L, long long p, long long v,
                              int32_t nl)
{
    if (p * v <= nl)
        return;
    if (v > 1)
        luaL_error(L,
                   "%I stages (stages %d x virtual_stages %d) but only %d "
                   "layers",
                   (lua_Integer)(p * v), (int)p, (int)v, (int)nl);
    luaL_error(L, "%d stages but only %d layers", (int)p, (int)nl);
}

/* A checked, read copy of a layer list ("sealed" layers): the list's
 * numbers as the core reads them, and its names (the strings, kept in the
 * userdata's user value, so that a layer renamed later cannot free one).
 * It is a snapshot: changing the list afterwards does not change it.
 * lua/pipesim/init.lua passes one as `layers` to core.check_run and
 * core.run in a sweep whose points share their layers (README "Sweeps"),
 * so that a point does not read every layer again. */
#define SEALED_TYPE "pipesim.layers"

typedef struct sealed_layers {
    int32_t n;
    int uses_flops;
    pipe_layer l[]; /* n of them */
} sealed_layers;

/* [-0, +0] The sealed layers at idx, or NULL when it is something else. */
static sealed_layers *test_sealed(lua_State *L, int idx)
{
    return lua_type(L, idx) == LUA_TUSERDATA
               ? luaL_testudata(L, idx, SEALED_TYPE)
               : NULL;
}

/* core.check_run reads the layers of ps.run's table; core.run, called next
 * by init.lua, gets the same table unless the Lua layer replaced the list
 * (model or weighted layers): then it reuses what check_run read, once,
 * instead of reading every layer twice per run. The registry slot holds
 * { layers table, scratch userdata, uses_flops }. */
#define CHECKED_KEY "pipesim.checked_layers"

/* [-0, +0] */
static void keep_checked(lua_State *L, int layers_idx, int scratch_idx,
                         int uses_flops)
{
    lua_createtable(L, 3, 0);
    lua_pushvalue(L, layers_idx);
    lua_rawseti(L, -2, 1);
    lua_pushvalue(L, scratch_idx);
    lua_rawseti(L, -2, 2);
    lua_pushboolean(L, uses_flops);
    lua_rawseti(L, -2, 3);
    lua_setfield(L, LUA_REGISTRYINDEX, CHECKED_KEY);
}

/* [-0, +(0|1)] Pushes the scratch check_run kept for the layer list at
 * layers_idx and returns 1, or returns 0 (nothing pushed). Either way the slot
 * is emptied: a kept list serves one core.run. */
static int reuse_checked(lua_State *L, int layers_idx, pipe_config *cfg,
                         int *uses_flops)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, CHECKED_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        return 0;
    }
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, CHECKED_KEY);
    lua_rawgeti(L, -1, 1);
    int same = lua_rawequal(L, -1, layers_idx);
    lua_pop(L, 1);
    if (!same) {
        lua_pop(L, 1);
        return 0;
    }
    lua_rawgeti(L, -1, 3);
    *uses_flops = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_rawgeti(L, -1, 2);
    lua_remove(L, -2);
    cfg->layers = ((sealed_layers *)lua_touserdata(L, -1))->l;
    cfg->nlayers = (int32_t)bind_list_len(L, layers_idx, "layers");
    return 1;
}

/* The fields init.lua computes from before core.run, checked in the same
 * way for both: names at the top, the counts (in 64 bits before they are
 * narrowed: ranks as in ps.cluster, chunks per rank as sched/sched.h allows)
 * and every layer, read into cfg->layers (a scratch userdata left on the
 * stack). *uses_flops: some layer needs the device's FLOP/s. sealed > 0:
 * the stack index of sealed layers standing for spec.layers; < 0: the
 * scratch is made a sealed copy (names anchored); 0: neither. A `layers`
 * field holding sealed layers is taken as they are. [-0, +1] */
/* The layout's sizes (stages, microbatches, virtual stages, dp, tp, cp,
 * ep, etp) and checkpoint into cfg, each checked, their products within
 * MAX_RANKS, and the world against the cluster when tp or cp splits it. */
static void read_sizes(lua_State *L, pipe_config *cfg)
{
    long long p = 0, v = 1, m = 0, dp = 1;
    if (lua_getfield(L, 1, "layers") == LUA_TNIL)
        luaL_error(L, "missing field 'layers' (a list of layer tables)");
    lua_pop(L, 1);
    if (!bind_int(L, 1, "stages", 1, MAX_RANKS, &p))
        luaL_error(L, "missing field 'stages' (pipeline stages, one per "
                      "rank)");
    if (!bind_int(L, 1, "microbatches", 1, INT32_MAX, &m))
        luaL_error(L, "missing field 'microbatches'");
    bind_int(L, 1, "virtual_stages", 1, INT16_MAX, &v);
    bind_int(L, 1, "dp", 1, MAX_RANKS, &dp);
    /* tp: lua/pipesim/parallel.lua lowers the layers for one TP rank and
     * the layout places the groups: checked here, before that code loops
     * over it */
    long long tp = 1, cp = 1;
    bind_int(L, 1, "tp", 1, MAX_RANKS, &tp);
    cfg->tp = (int32_t)tp;
    /* cp: lua/pipesim/cp.lua lowers the layers for one CP rank; the layout
     * places the CP groups and the gradient sync spans dp x cp */
    bind_int(L, 1, "cp", 1, MAX_RANKS, &cp);
    cfg->cp = (int32_t)cp;
    /* expert parallelism (par/ep.h): the layout checks that etp x ep x pp
     * divides the world */
    long long ep = 1, etp = 0;
    bind_int(L, 1, "ep", 1, MAX_RANKS, &ep);
    bind_int(L, 1, "etp", 1, MAX_RANKS, &etp);
    cfg->ep = (int32_t)ep;
    cfg->etp = (int32_t)etp;
    /* every path reads checkpoint here, before the Lua layer turns it into
     * a recompute mode (issue 27: model layers once took any value) */
    bind_boolean(L, 1, "checkpoint", &cfg->checkpoint);
    if (dp * p > MAX_RANKS) /* both <= 2^20: no overflow */
        luaL_error(
            L, "dp %I x %I stages is %I ranks, more than the limit of %d",
            (lua_Integer)dp, (lua_Integer)p, (lua_Integer)(dp * p), MAX_RANKS);
    if (tp * cp > MAX_RANKS) /* both <= 2^20: fits 64 bits */
        luaL_error(L, "tp %I x cp %I is %I ranks, more than the limit of %d",
                   (lua_Integer)tp, (lua_Integer)cp, (lua_Integer)(tp * cp),
                   MAX_RANKS);
    if (cp > 1 && tp * cp * dp * p > MAX_RANKS) /* each <= 2^20 */
        luaL_error(L,
                   "tp %I x cp %I x stages %I x dp %I is %I ranks, more than "
                   "the limit of %d",
                   (lua_Integer)tp, (lua_Integer)cp, (lua_Integer)p,
                   (lua_Integer)dp, (lua_Integer)(tp * cp * dp * p), MAX_RANKS);
    if (tp * dp * p > MAX_RANKS) /* all three <= 2^20: fits 64 bits */
        luaL_error(L,
                   "tp %I x stages %I x dp %I is %I ranks, more than the "
                   "limit of %d",
                   (lua_Integer)tp, (lua_Integer)p, (lua_Integer)dp,
                   (lua_Integer)(tp * dp * p), MAX_RANKS);
    cfg->p = (int32_t)p;
    cfg->v = (int32_t)v;
    cfg->m = (int32_t)m;
    cfg->dp = (int32_t)dp;
    /* the layout on the cluster, before the Lua layer costs a TP group
     * (with tp = 1 nothing reads it before core.run checks it) */
    if ((tp > 1 || cp > 1) && lua_getfield(L, 1, "cluster") == LUA_TUSERDATA) {
        bind_cluster *cl = luaL_testudata(L, -1, BIND_CLUSTER_TYPE);
        ps_err err;
        if (cl && cl->nw && pipe_check_world(cfg, cl->nranks, &err))
            luaL_error(L, "%s", err.msg);
    }
    if (tp > 1 || cp > 1)
        lua_pop(L, 1);
}

static void read_shape(lua_State *L, pipe_config *cfg, int *uses_flops,
                       int sealed)
{
    bind_check_fields(L, 1, "", bind_fields_run);
    read_sizes(L, cfg);

    /* sealed: the list was read once for the whole sweep (the copy stays
     * on the stack as this run's scratch) */
    lua_getfield(L, 1, "layers");
    sealed_layers *sl = test_sealed(L, -1);
    if (!sl && sealed > 0) {
        lua_pop(L, 1);
        lua_pushvalue(L, sealed);
        sl = test_sealed(L, -1);
    }
    if (sl) {
        cfg->layers = sl->l;
        cfg->nlayers = sl->n;
        *uses_flops = sl->uses_flops;
        check_stage_count(L, cfg->p, cfg->v, sl->n);
        return;
    }
    lua_pop(L, 1);
    if (!bind_table(L, 1, "layers", "(a list of layer tables)"))
        luaL_error(L, "missing field 'layers' (a list of layer tables)");
    int layers_idx = lua_gettop(L);
    if (reuse_checked(L, layers_idx, cfg, uses_flops)) {
        lua_remove(L, layers_idx);
        check_stage_count(L, cfg->p, cfg->v, cfg->nlayers);
        return;
    }
    lua_Integer nlayers = bind_list_len(L, layers_idx, "layers");
    if (nlayers < 1)
        luaL_error(L, "field 'layers' is empty");
    if (nlayers > MAX_LAYERS)
        luaL_error(L, "field 'layers' has %I layers, more than %d", nlayers,
                   MAX_LAYERS);
    int32_t nl = (int32_t)nlayers;
    sl = lua_newuserdatauv(L, sizeof *sl + (size_t)nl * sizeof *sl->l, 1);
    memset(sl, 0, sizeof *sl + (size_t)nl * sizeof *sl->l);
    sl->n = nl;
    int scratch_idx = lua_gettop(L);
    if (sealed < 0) { /* a copy that outlives the call: anchor the names */
        lua_createtable(L, nl, 0);
        lua_setiuservalue(L, scratch_idx, 1);
        static const luaL_Reg none[] = {{NULL, NULL}};
        bind_setmetatable(L, SEALED_TYPE, none);
    }
    pipe_layer *layers = sl->l;
    *uses_flops = 0;
    int map = layer_key_map(L);
    for (int32_t i = 0; i < nl; i++) {
        lua_geti(L, layers_idx, i + 1);
        read_layer(L, lua_gettop(L), i + 1, &layers[i], map);
        *uses_flops |= layers[i].fwd_time < 0 ||
                       (layers[i].bwd_time < 0 && layers[i].bwd_flops >= 0);
        if (sealed < 0 && layers[i].name) {
            lua_getiuservalue(L, scratch_idx, 1);
            lua_getfield(L, -2, "name"); /* the string read_layer took */
            lua_rawseti(L, -2, i + 1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    sl->uses_flops = *uses_flops;
    lua_pop(L, 1);             /* the key map */
    lua_remove(L, layers_idx); /* the layer names stay alive in spec */
    cfg->layers = layers;
    cfg->nlayers = nl;
    check_stage_count(L, cfg->p, cfg->v, nl);
}

/* [-0, +(0|1)] core.check_run(spec [, sealed | true]): raises on the
 * fields read_shape checks, so that init.lua computes the partition and
 * the parallel layout from checked input; core.run checks them again
 * (cheap next to a run). With sealed layers as the second argument they
 * stand for spec.layers, which is not read; with true, returns the layers
 * it read as sealed layers (a sweep's first point). */
static int core_check_run(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2);
    int sealed = test_sealed(L, 2) ? 2 : lua_toboolean(L, 2) ? -1 : 0;
    pipe_config cfg;
    pipe_config_init(&cfg);
    int uses_flops;
    lua_pushnil(L); /* no kept list: this call reads every layer */
    lua_setfield(L, LUA_REGISTRYINDEX, CHECKED_KEY);
    read_shape(L, &cfg, &uses_flops, sealed); /* pushes the scratch */
    if (sealed != 0)
        return sealed < 0; /* the new copy, on top */
    lua_getfield(L, 1, "layers");
    keep_checked(L, lua_gettop(L), lua_gettop(L) - 1, uses_flops);
    return 0;
}

/* [-0, +1] core.seal_layers(list): the list read and checked as ps.run's
 * layers, as sealed layers (a snapshot). */
static int core_seal_layers(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_createtable(L, 0, 3); /* a run table holding only the layers */
    lua_insert(L, 1);
    lua_setfield(L, 1, "layers");
    lua_pushinteger(L, 1);
    lua_setfield(L, 1, "stages");
    lua_pushinteger(L, 1);
    lua_setfield(L, 1, "microbatches");
    pipe_config cfg;
    pipe_config_init(&cfg);
    int uses_flops;
    read_shape(L, &cfg, &uses_flops, -1);
    return 1;
}

/* [-0, +2] The cluster (or an ideal one for the layout's world) and the
 * placement: an explicit ranks list (cfg->ranks, a scratch left on the
 * stack below the cluster) or Megatron's order (cfg->order); checks the
 * layout's world against the cluster and the device FLOP/s layers need.
 * Returns the cluster, on top. */
static bind_cluster *read_cluster_ranks(lua_State *L, pipe_config *cfg,
                                        int uses_flops)
{
    /* cluster and placement: the layout's world (tp x dp x p ranks) on
     * the cluster, Megatron's order or an explicit list */
    bind_cluster *cl;
    int32_t n = cfg->tp * cfg->cp * cfg->p * cfg->dp; /* <= MAX_RANKS */
    if (lua_getfield(L, 1, "cluster") == LUA_TNIL) {
        lua_pop(L, 1);
        cl = bind_push_ideal_cluster(L, n);
    } else {
        cl = bind_check_cluster(L, -1);
    }
    cfg->net_id = bind_cluster_id(L, -1);
    ps_err werr;
    if (pipe_check_world(cfg, cl->nranks, &werr))
        luaL_error(L, "%s", werr.msg);
    int32_t *ranks = bind_run_scratch(L, (size_t)n, sizeof *ranks);
    lua_rotate(L, -2, 1); /* keep the cluster on top */
    if (bind_table(L, 1, "ranks", "of cluster ranks such as { 0, 1, 2, 3 }")) {
        lua_Integer len = bind_list_len(L, -1, "ranks");
        if (len != n) {
            /* the layout the list must cover, in the list's order */
            char what[96];
            if (cfg->cp > 1)
                snprintf(what, sizeof what,
                         "tp %d x cp %d x stages %d x dp %d, TP rank "
                         "innermost",
                         (int)cfg->tp, (int)cfg->cp, (int)cfg->p, (int)cfg->dp);
            else if (cfg->tp > 1)
                snprintf(what, sizeof what,
                         "tp %d x stages %d x dp %d, TP rank innermost",
                         (int)cfg->tp, (int)cfg->p, (int)cfg->dp);
            else
                snprintf(what, sizeof what, "one per stage%s",
                         cfg->dp > 1 ? " of every replica" : "");
            luaL_error(L,
                       "field 'ranks' must list %d cluster ranks (%s), got %d",
                       (int)n, what, (int)len);
        }
        for (int32_t k = 0; k < n; k++) {
            lua_geti(L, -1, k + 1);
            long long r;
            int at = lua_gettop(L);
            bind_check_int(L, at, lua_pushfstring(L, "ranks[%d]", (int)k + 1),
                           0, cl->nranks - 1, &r);
            lua_pop(L, 2);
            ranks[k] = (int32_t)r;
        }
        cfg->ranks = ranks;
    } else {
        lua_pushnil(L); /* popped below, like the list */
        const char *placement = bind_string(L, 1, "placement");
        ps_err err;
        if (placement && par_parse_order(placement, &cfg->order, &err))
            luaL_error(L, "field 'placement': %s", err.msg);
        for (int32_t k = 0; k < n; k++)
            ranks[k] = k; /* Megatron's orders cover ranks 0 .. n - 1 */
    }
    lua_pop(L, 1);
    if (uses_flops) {
        for (int32_t k = 0; k < n; k++)
            if (isnan(cl->rate[ranks[k]]))
                luaL_error(L, "layers give FLOPs but the cluster has no "
                              "device flops (set cluster.device.flops "
                              "or give fwd_time)");
    }
    return cl;
}

/* [-0, +1] core.run(spec): reads spec into a pipe_config, runs and records
 * it through pipe_run, pushes the result table. */
static int core_run(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    pipe_config cfg;
    pipe_config_init(&cfg);
    int uses_flops = 0;
    read_shape(L, &cfg, &uses_flops, 0); /* leaves the layers' scratch */
    cfg.name = bind_string(L, 1, "name");
    /* recorded only: lua/pipesim/parallel.lua has lowered them */
    bind_boolean(L, 1, "sequence_parallel", &cfg.sequence_parallel);
    cfg.recompute = bind_string(L, 1, "recompute");
    bind_boolean(L, 1, "split_backward", &cfg.split_backward);
    bind_boolean(L, 1, "fold", &cfg.fold); /* replica folding, par/fold.h */
    cfg.p2p = bind_p2p(L, 1, &cfg.pytorch_p2p);
    int recording = bind_record(L, 1, &cfg.record);

    const sched_action **orders = NULL;
    int32_t *counts = NULL;
    bind_run_schedule(L, &cfg, &orders, &counts);
    cfg.placement = bind_run_placement(L, 1, &cfg, &cfg.place);
    bind_run_overlap(L, &cfg);
    bind_run_memory(L, &cfg);
    bind_run_partition(L, &cfg);
    bind_cluster *cl = read_cluster_ranks(L, &cfg, uses_flops);
    bind_run_grad_sync(L, &cfg);
    cfg.gpus_per_node = cl->gpus_per_node;
    cfg.hw = cl->hw;
    cfg.device_rate = cl->rate;
    cfg.device_memory = cl->memory;

    cfg.faults = bind_faults(L, 1, cl->nranks, 1);
    bind_live lv; /* live mode (bind/live.c): one step unless asked */
    bind_live_read(L, 1, 1, 0, &lv);
    cfg.live = bind_live_pipe(L, 1, &lv, &cfg);

    cfg.params_json = bind_params_json(L, 1);
    bind_meta(L, 1, &cfg.meta);
    rec_db *db = NULL;
    if (recording) {
        const char *path = bind_string(L, 1, "db");
        db = bind_database(L, path);
    }
    pipe_result res;
    ps_err err;
    pipe_ctx *ctx = bind_context(L, CTX_KEY, ctx_make, ctx_drop);
    if (db)
        bind_sweep_batch(L, db, cfg.meta.sweep); /* a sweep's: batched */
    int rc = run_step(ctx, &cfg, cl->nw, db, &res, &err);
    if (db && res.id > 0)
        bind_count_run(L);
    bind_progress(L);
    if (rc == PS_OK)
        rc = bind_live_bytes_log(L, &lv, db, res.id,
                                 db && cfg.record == REC_EVENTS,
                                 cfg.live ? &cfg.live->run : NULL, &err);
    if (rc)
        return bind_raise(L, &err);

    bind_run_push_result(L, &cfg, &res);
    return 1;
}

/* [-0, +1] core.layer_units() -> { fwd_flops = "flop", ... }: each numeric
 * layer field's unit as core.parse names it, from layer_nums (the Lua
 * front end turns a layer's unit strings into numbers with it) */
static int core_layer_units(lua_State *L)
{
    /* core.parse's kinds (bind/core.c), by enum unit_kind */
    static const char *const names[] = {
        [UNIT_SECONDS] = "time",        [UNIT_BYTES] = "bytes",
        [UNIT_BANDWIDTH] = "bandwidth", [UNIT_FLOP] = "flop",
        [UNIT_FLOP_RATE] = "flop_rate", [UNIT_RATIO] = "ratio"};
    lua_createtable(L, 0, (int)NLAYER_NUMS);
    for (size_t f = 0; f < NLAYER_NUMS; f++) {
        lua_pushstring(L, names[layer_nums[f].kind]);
        lua_setfield(L, -2, layer_nums[f].key);
    }
    return 1;
}

const luaL_Reg bind_run_funcs[] = {
    {"run", core_run},
    {"layer_units", core_layer_units},
    {"check_run", core_check_run},
    {"seal_layers", core_seal_layers},
    {NULL, NULL},
};

/* [-0, +0] raises "internal: ..." when a field of layer_nums is missing
 * from bind_fields_layer (checked once at start-up) */
void bind_check_layer_fields(lua_State *L)
{
    for (size_t f = 0; f < NLAYER_NUMS; f++) {
        const char *const *k = bind_fields_layer;
        while (*k && strcmp(*k, layer_nums[f].key) != 0)
            k++;
        if (!*k)
            luaL_error(L, "internal: layer field '%s' not in bind_fields_layer",
                       layer_nums[f].key);
    }
}
