/* core.run: one pipeline training step from a normalized scenario table
 * (lua/pipesim/init.lua has resolved the partition and checked field names).
 * Scratch arrays are Lua userdata, so an error raised half way leaks
 * nothing; the pipe_ctx lives in the registry and is reused by every run. */
#include <lauxlib.h>
#include <math.h>
#include <string.h>

#include "bind.h"
#include "bind_cluster.h"
#include "coll.h"
#include "pipe.h"
#include "unit.h"

#define CTX_TYPE "pipesim.pipe_ctx"         /* metatable name */
#define CTX_KEY "pipesim.pipe_ctx.instance" /* registry slot of the ctx */

static int ctx_gc(lua_State *L)
{
    pipe_ctx **c = luaL_checkudata(L, 1, CTX_TYPE);
    pipe_ctx_free(*c);
    *c = NULL;
    return 0;
}

static pipe_ctx *get_ctx(lua_State *L)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, CTX_KEY) == LUA_TUSERDATA) {
        pipe_ctx *c = *(pipe_ctx **)lua_touserdata(L, -1);
        lua_pop(L, 1);
        return c;
    }
    lua_pop(L, 1);
    pipe_ctx **c = lua_newuserdatauv(L, sizeof *c, 0);
    *c = NULL;
    luaL_setmetatable(L, CTX_TYPE);
    *c = pipe_ctx_new();
    if (!*c)
        luaL_error(L, "out of memory");
    lua_setfield(L, LUA_REGISTRYINDEX, CTX_KEY);
    return *c;
}

static void *scratch(lua_State *L, size_t n, size_t size)
{
    void *p = lua_newuserdatauv(L, n * size + 1, 0);
    memset(p, 0, n * size + 1);
    return p; /* stays on the stack until core_run returns */
}

/* One numeric field of layers[i]; errors name the layer and the field. */
static double layer_field(lua_State *L, int idx, int i, const char *name,
                          enum unit_kind kind, double def)
{
    double v = def;
    int t = lua_getfield(L, idx, name);
    if (t == LUA_TNUMBER) {
        v = lua_tonumber(L, -1);
    } else if (t == LUA_TSTRING) {
        ps_err err;
        if (unit_parse(lua_tostring(L, -1), kind, &v, &err))
            luaL_error(L, "layers[%d]: field '%s': %s", i, name, err.msg);
    } else if (t != LUA_TNIL) {
        luaL_error(L, "layers[%d]: field '%s' must be a number, got a %s", i,
                   name, luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    if (t != LUA_TNIL && !(v >= 0 && isfinite(v)))
        luaL_error(L,
                   "layers[%d]: field '%s' must be a finite number >= 0, "
                   "got %f",
                   i, name, v);
    return v;
}

static void read_layer(lua_State *L, int idx, int i, pipe_layer *l)
{
    if (!lua_istable(L, idx))
        luaL_error(L, "layers[%d] must be a table", i);
    l->fwd_flops = layer_field(L, idx, i, "fwd_flops", UNIT_FLOP, -1);
    l->bwd_flops = layer_field(L, idx, i, "bwd_flops", UNIT_FLOP, -1);
    l->fwd_time = layer_field(L, idx, i, "fwd_time", UNIT_SECONDS, -1);
    l->bwd_time = layer_field(L, idx, i, "bwd_time", UNIT_SECONDS, -1);
    l->params = layer_field(L, idx, i, "params", UNIT_FLOP, 0);
    l->act_bytes = layer_field(L, idx, i, "act_bytes", UNIT_BYTES, 0);
    l->out_bytes = layer_field(L, idx, i, "out_bytes", UNIT_BYTES, 0);
    l->in_bytes = layer_field(L, idx, i, "in_bytes", UNIT_BYTES, -1);
    l->bwd_input_flops =
        layer_field(L, idx, i, "bwd_input_flops", UNIT_FLOP, -1);
    l->bwd_weight_flops =
        layer_field(L, idx, i, "bwd_weight_flops", UNIT_FLOP, -1);
    l->bwd_input_time =
        layer_field(L, idx, i, "bwd_input_time", UNIT_SECONDS, -1);
    l->bwd_weight_time =
        layer_field(L, idx, i, "bwd_weight_time", UNIT_SECONDS, -1);
    l->bwd_weight_bytes =
        layer_field(L, idx, i, "bwd_weight_bytes", UNIT_BYTES, -1);
    l->recompute_time =
        layer_field(L, idx, i, "recompute_time", UNIT_SECONDS, -1);
    l->kept_bytes = layer_field(L, idx, i, "kept_bytes", UNIT_BYTES, -1);
    l->name = bind_string(L, idx, "name");
    if (l->fwd_time < 0 && l->fwd_flops < 0)
        luaL_error(L, "layers[%d]: missing field 'fwd_flops' or 'fwd_time'", i);
}

/* "pytorch": rendezvous transfers posted the way PyTorch's
 * _PipelineScheduleRuntime posts them (sched_spec.pytorch_p2p). */
static enum eng_p2p read_p2p(lua_State *L, int idx, int *pytorch)
{
    const char *p2p = bind_string(L, idx, "p2p");
    *pytorch = 0;
    if (!p2p || strcmp(p2p, "rendezvous") == 0)
        return ENG_RENDEZVOUS;
    if (strcmp(p2p, "eager") == 0)
        return ENG_EAGER;
    if (strcmp(p2p, "pytorch") == 0) {
        *pytorch = 1;
        return ENG_RENDEZVOUS;
    }
    luaL_error(L,
               "field 'p2p': unknown mode '%s' (expected rendezvous, eager "
               "or pytorch)",
               p2p);
    return ENG_RENDEZVOUS;
}

/* chunk_placement: "loop" or "v"; default the schedule's own. */
static enum sched_placement read_placement(lua_State *L, int idx,
                                           enum sched_kind kind)
{
    const char *pl = bind_string(L, idx, "chunk_placement");
    if (!pl)
        return sched_default_placement(kind);
    if (strcmp(pl, "loop") == 0)
        return SCHED_LOOP;
    if (strcmp(pl, "v") == 0)
        return SCHED_V;
    luaL_error(L,
               "field 'chunk_placement': unknown placement '%s' (expected "
               "loop or v)",
               pl);
    return SCHED_LOOP;
}

/* record: "events" (default), "summary", or "none" (no database at all). */
static int read_record(lua_State *L, int idx, enum rec_level *level)
{
    const char *r = bind_string(L, idx, "record");
    *level = REC_EVENTS;
    if (!r || strcmp(r, "events") == 0)
        return 1;
    if (strcmp(r, "summary") == 0) {
        *level = REC_SUMMARY;
        return 1;
    }
    if (strcmp(r, "none") == 0)
        return 0;
    luaL_error(L,
               "field 'record': unknown level '%s' (expected events, "
               "summary or none)",
               r);
    return 0;
}

/* A custom schedule: one list of action strings per pipeline rank. */
static void read_custom(lua_State *L, int idx, pipe_config *cfg,
                        const sched_action ***orders, int32_t **counts)
{
    int32_t p = cfg->p;
    if ((int32_t)luaL_len(L, idx) != p)
        luaL_error(L, "field 'schedule': %d action lists for %d stages",
                   (int)luaL_len(L, idx), (int)p);
    *orders = scratch(L, (size_t)p, sizeof **orders);
    *counts = scratch(L, (size_t)p, sizeof **counts);
    for (int32_t r = 0; r < p; r++) {
        lua_geti(L, idx, r + 1);
        if (!lua_istable(L, -1))
            luaL_error(L,
                       "field 'schedule': entry %d must be a list of "
                       "actions such as {\"F0\", \"B0\"}",
                       (int)r + 1);
        int list = lua_gettop(L);
        int32_t n = (int32_t)luaL_len(L, list);
        sched_action *a = scratch(L, (size_t)n, sizeof *a);
        lua_rotate(L, list, 1); /* keep the scratch below the list */
        list = lua_gettop(L);
        for (int32_t i = 0; i < n; i++) {
            lua_geti(L, list, i + 1);
            const char *text = lua_tostring(L, -1);
            ps_err err;
            if (!text)
                luaL_error(L,
                           "field 'schedule': rank %d action %d is not a "
                           "string",
                           (int)r, (int)i + 1);
            if (sched_parse_action(text, cfg->m, cfg->v, &a[i], &err))
                luaL_error(L, "field 'schedule': rank %d: %s", (int)r, err.msg);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        (*orders)[r] = a;
        (*counts)[r] = n;
    }
}

/* grad_sync = { bucket, first_bucket, algorithm, overlap }, zero,
 * optimizer_time. Defaults: PyTorch DDP's 25 MiB buckets and 1 MiB first
 * bucket (torch.nn.parallel.DistributedDataParallel bucket_cap_mb and
 * dist._DEFAULT_FIRST_BUCKET_BYTES), auto algorithm, overlap on. */
static void read_grad_sync(lua_State *L, pipe_config *cfg,
                           const bind_cluster *cl)
{
    cfg->bucket_bytes = 25.0 * 1024 * 1024;
    cfg->first_bucket_bytes = 1.0 * 1024 * 1024;
    cfg->grad_algorithm = COLL_AUTO;
    cfg->overlap = 1;
    if (lua_getfield(L, 1, "grad_sync") == LUA_TTABLE) {
        int t = lua_gettop(L);
        bind_quantity(L, t, "grad_sync.bucket", UNIT_BYTES, &cfg->bucket_bytes);
        bind_quantity(L, t, "grad_sync.first_bucket", UNIT_BYTES,
                      &cfg->first_bucket_bytes);
        bind_boolean(L, t, "overlap", &cfg->overlap);
        const char *algo = bind_string(L, t, "algorithm");
        ps_err err;
        if (algo &&
            coll_parse_algo(COLL_ALLREDUCE, algo, &cfg->grad_algorithm, &err))
            luaL_error(L, "field 'grad_sync.algorithm': %s", err.msg);
        if (!(cfg->bucket_bytes > 0) || !(cfg->first_bucket_bytes > 0))
            luaL_error(L, "field 'grad_sync.bucket' and 'first_bucket' must "
                          "be positive");
    } else if (!lua_isnil(L, -1)) {
        luaL_error(L, "field 'grad_sync' must be a table such as { bucket = "
                      "\"25 MB\", overlap = true }");
    }
    lua_pop(L, 1);
    /* the reduction runs on the network like NCCL: NCCL's tuner picks
     * between ring and tree for allreduce (ncclTopoTuneModel) */
    if (cfg->grad_algorithm == COLL_AUTO)
        cfg->grad_candidates = (1u << COLL_RING) | (1u << COLL_TREE);
    long long zero = 0;
    bind_integer(L, 1, "zero", &zero);
    if (zero != 0 && zero != 1)
        luaL_error(L, "field 'zero' must be 0 or 1 (ZeRO stage 1), got %d",
                   (int)zero);
    cfg->zero = (int)zero;
    cfg->optimizer_seconds = 0;
    bind_quantity(L, 1, "optimizer_time", UNIT_SECONDS,
                  &cfg->optimizer_seconds);
    if (cfg->optimizer_seconds < 0)
        luaL_error(L, "field 'optimizer_time' must not be negative");
    /* a data-parallel group that is whole nodes can use hierarchical
     * collectives */
    int32_t g = cl->gpus_per_node;
    cfg->ranks_per_node = 0;
    if (g > 1 && cfg->dp % g == 0) {
        int aligned = 1;
        for (int32_t r = 0; r < cfg->p && aligned; r++)
            for (int32_t j = 0; j < cfg->dp; j++)
                if (cfg->rank_of[j * cfg->p + r] !=
                    cfg->rank_of[r] + j) /* consecutive ranks */
                    aligned = 0;
        for (int32_t r = 0; r < cfg->p && aligned; r++)
            aligned = cfg->rank_of[r] % g == 0;
        if (aligned)
            cfg->ranks_per_node = g;
    }
}

static void push_ints(lua_State *L, const int32_t *v, int32_t n)
{
    lua_createtable(L, n, 0);
    for (int32_t i = 0; i < n; i++) {
        lua_pushinteger(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

static void push_array(lua_State *L, const double *v, int32_t n)
{
    lua_createtable(L, n, 0);
    for (int32_t i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

static void set_number(lua_State *L, const char *k, double v)
{
    if (isnan(v))
        return;
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

/* [-0, +0] Sets r.fits (nil when a capacity is unknown) and, when some
 * entries exceed their device's memory, r.over_capacity (their 1-based
 * indices into the per-rank arrays) and r.over_capacity_ranks (their
 * cluster rank numbers, from 0 as in the database) on the table on top. */
static void push_fits(lua_State *L, const pipe_result *res)
{
    if (res->fits != REC_FITS_UNKNOWN) {
        lua_pushboolean(L, res->fits == REC_FITS_YES);
        lua_setfield(L, -2, "fits");
    }
    if (res->nover == 0)
        return;
    lua_createtable(L, res->nover, 0);
    lua_createtable(L, res->nover, 0);
    for (int32_t k = 0, i = 0; k < res->n; k++) {
        if (!(res->capacity[k] > 0 && res->peak_memory[k] > res->capacity[k]))
            continue;
        i++;
        lua_pushinteger(L, k + 1);
        lua_rawseti(L, -3, i);
        lua_pushinteger(L, res->rank[k]);
        lua_rawseti(L, -2, i);
    }
    lua_setfield(L, -3, "over_capacity_ranks");
    lua_setfield(L, -2, "over_capacity");
}

static int core_run(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    pipe_config cfg = {0};
    cfg.name = bind_string(L, 1, "name");
    long long p = 0, v = 1, m = 0;
    bind_integer(L, 1, "stages", &p);
    bind_integer(L, 1, "virtual_stages", &v);
    bind_integer(L, 1, "microbatches", &m);
    if (m < 1)
        return luaL_error(L, "field 'microbatches' must be at least 1, got %d",
                          (int)m);
    if (p < 1)
        return luaL_error(L, "field 'stages' must be at least 1, got %d",
                          (int)p);
    if (v < 1)
        return luaL_error(
            L, "field 'virtual_stages' must be at least 1, got %d", (int)v);
    cfg.p = (int32_t)p;
    cfg.v = (int32_t)v;
    cfg.m = (int32_t)m;
    bind_boolean(L, 1, "checkpoint", &cfg.checkpoint);
    bind_boolean(L, 1, "split_backward", &cfg.split_backward);
    cfg.p2p = read_p2p(L, 1, &cfg.pytorch_p2p);
    int recording = read_record(L, 1, &cfg.record);
    cfg.params_json = bind_string(L, 1, "params_json");

    /* schedule */
    const sched_action **orders = NULL;
    int32_t *counts = NULL;
    lua_getfield(L, 1, "schedule");
    if (lua_istable(L, -1)) {
        cfg.schedule = SCHED_CUSTOM;
        cfg.schedule_name = "custom";
        read_custom(L, lua_gettop(L), &cfg, &orders, &counts);
        cfg.custom = orders;
        cfg.ncustom = counts;
    } else {
        const char *name = lua_isnil(L, -1) ? "1f1b" : lua_tostring(L, -1);
        ps_err err;
        if (!name)
            return luaL_error(L, "field 'schedule' must be a name or a list "
                                 "of actions per stage");
        if (sched_parse(name, &cfg.schedule, &err))
            return luaL_error(L, "field 'schedule': %s", err.msg);
        cfg.schedule_name = sched_name(cfg.schedule);
    }
    cfg.placement = read_placement(L, 1, cfg.schedule);

    /* memory accounting per parameter */
    cfg.weight_bytes = 2;
    cfg.grad_bytes = 2;
    cfg.optimizer_bytes = 12;
    if (lua_getfield(L, 1, "memory") == LUA_TTABLE) {
        int t = lua_gettop(L);
        bind_quantity(L, t, "weight_bytes", UNIT_BYTES, &cfg.weight_bytes);
        bind_quantity(L, t, "grad_bytes", UNIT_BYTES, &cfg.grad_bytes);
        bind_quantity(L, t, "optimizer_bytes", UNIT_BYTES,
                      &cfg.optimizer_bytes);
    }
    lua_pop(L, 1);

    /* layers */
    if (lua_getfield(L, 1, "layers") != LUA_TTABLE)
        return luaL_error(L, "missing field 'layers' (a list of layer tables)");
    int layers_idx = lua_gettop(L);
    int32_t nl = (int32_t)luaL_len(L, layers_idx);
    if (nl < 1)
        return luaL_error(L, "field 'layers' is empty");
    pipe_layer *layers = scratch(L, (size_t)nl, sizeof *layers);
    int uses_flops = 0;
    for (int32_t i = 0; i < nl; i++) {
        lua_geti(L, layers_idx, i + 1);
        read_layer(L, lua_gettop(L), i + 1, &layers[i]);
        uses_flops |= layers[i].fwd_time < 0 ||
                      (layers[i].bwd_time < 0 && layers[i].bwd_flops >= 0);
        lua_pop(L, 1);
    }
    cfg.layers = layers;
    cfg.nlayers = nl;

    /* partition: resolved by the Lua layer into p * v counts */
    int32_t nstages = cfg.p * cfg.v;
    if (nstages > nl)
        return luaL_error(L,
                          "%d stages (stages %d x virtual_stages %d) but "
                          "only %d layers",
                          (int)nstages, (int)cfg.p, (int)cfg.v, (int)nl);
    if (lua_getfield(L, 1, "partition") != LUA_TTABLE)
        return luaL_error(L, "field 'partition' must be a list of layer "
                             "counts");
    if ((int32_t)luaL_len(L, -1) != nstages)
        return luaL_error(L,
                          "field 'partition' has %d entries, expected %d "
                          "(one per stage%s)",
                          (int)luaL_len(L, -1), (int)nstages,
                          cfg.v > 1 ? " and virtual stage" : "");
    int32_t *partition = scratch(L, (size_t)nstages, sizeof *partition);
    lua_rotate(L, -2, 1);
    for (int32_t s = 0; s < nstages; s++) {
        lua_geti(L, -1, s + 1);
        int ok;
        lua_Integer c = lua_tointegerx(L, -1, &ok);
        if (!ok)
            return luaL_error(L,
                              "field 'partition': entry %d is not an "
                              "integer",
                              (int)s + 1);
        partition[s] = (int32_t)c;
        lua_pop(L, 1);
    }
    cfg.partition = partition;
    lua_pop(L, 1);

    /* cluster and placement */
    long long dp = 1;
    bind_integer(L, 1, "dp", &dp);
    if (dp < 1)
        return luaL_error(L, "field 'dp' must be at least 1, got %d", (int)dp);
    cfg.dp = (int32_t)dp;
    bind_cluster *cl;
    if (lua_getfield(L, 1, "cluster") == LUA_TNIL) {
        lua_pop(L, 1);
        cl = bind_push_ideal_cluster(L, cfg.p * cfg.dp);
    } else {
        cl = bind_check_cluster(L, -1);
    }
    int32_t n = cfg.p * cfg.dp;
    if (n > cl->nranks)
        return luaL_error(L,
                          "dp %d x %d stages need %d ranks but the cluster "
                          "has %d",
                          (int)cfg.dp, (int)cfg.p, (int)n, (int)cl->nranks);
    int32_t *rank_of = scratch(L, (size_t)n, sizeof *rank_of);
    lua_rotate(L, -2, 1); /* keep the cluster on top */
    if (lua_getfield(L, 1, "ranks") == LUA_TTABLE) {
        if ((int32_t)luaL_len(L, -1) != n)
            return luaL_error(L,
                              "field 'ranks' must list %d cluster ranks (one "
                              "per stage%s), got %d",
                              (int)n, cfg.dp > 1 ? " of every replica" : "",
                              (int)luaL_len(L, -1));
        for (int32_t k = 0; k < n; k++) {
            lua_geti(L, -1, k + 1);
            int ok;
            lua_Integer r = lua_tointegerx(L, -1, &ok);
            if (!ok || r < 0 || r >= cl->nranks)
                return luaL_error(L,
                                  "field 'ranks': entry %d is not a rank of "
                                  "the cluster (0..%d)",
                                  (int)k + 1, (int)cl->nranks - 1);
            rank_of[k] = (int32_t)r;
            lua_pop(L, 1);
        }
    } else {
        /* Megatron-LM orders ranks tp-cp-ep-dp-pp (parallel_state,
         * RankGenerator): data-parallel peers are adjacent, inside a node,
         * and the pipeline spans nodes. "pp_inner" is the reverse. */
        const char *placement = bind_string(L, 1, "placement");
        int pp_inner = 0;
        if (placement && strcmp(placement, "pp_inner") == 0)
            pp_inner = 1;
        else if (placement && strcmp(placement, "dp_inner") != 0)
            return luaL_error(L,
                              "field 'placement': unknown placement '%s' "
                              "(expected dp_inner or pp_inner)",
                              placement);
        for (int32_t j = 0; j < cfg.dp; j++)
            for (int32_t r = 0; r < cfg.p; r++)
                rank_of[j * cfg.p + r] =
                    pp_inner ? j * cfg.p + r : r * cfg.dp + j;
    }
    lua_pop(L, 1);
    cfg.rank_of = rank_of;
    if (uses_flops) {
        for (int32_t k = 0; k < n; k++)
            if (isnan(cl->rate[rank_of[k]]))
                return luaL_error(L, "layers give FLOPs but the cluster has no "
                                     "device flops (set cluster.device.flops "
                                     "or give fwd_time)");
    }
    read_grad_sync(L, &cfg, cl);
    cfg.device_rate = cl->rate;
    cfg.device_memory = cl->memory;

    rec_db *db = NULL;
    if (recording) {
        const char *path = bind_string(L, 1, "db");
        db = bind_database(L, path);
    }
    pipe_result res;
    ps_err err;
    int rc = pipe_run(get_ctx(L), &cfg, cl->nw, db, &res, &err);
    if (db && res.id > 0)
        bind_count_run(L);
    bind_progress(L);
    if (rc)
        return bind_raise(L, &err);

    lua_createtable(L, 0, 16);
    if (res.id > 0) {
        lua_pushinteger(L, res.id);
        lua_setfield(L, -2, "id");
    }
    if (cfg.name) {
        lua_pushstring(L, cfg.name);
        lua_setfield(L, -2, "name");
    }
    lua_pushstring(L, cfg.schedule_name);
    lua_setfield(L, -2, "schedule");
    lua_pushinteger(L, cfg.p);
    lua_setfield(L, -2, "stages");
    lua_pushinteger(L, cfg.m);
    lua_setfield(L, -2, "microbatches");
    lua_pushinteger(L, cfg.v);
    lua_setfield(L, -2, "virtual_stages");
    set_number(L, "makespan", res.makespan);
    set_number(L, "bubble", res.bubble);
    set_number(L, "closed_form_bubble", res.closed_form_bubble);
    set_number(L, "imbalance", res.imbalance);
    lua_pushinteger(L, cfg.dp);
    lua_setfield(L, -2, "dp");
    push_ints(L, res.rank, res.n);
    lua_setfield(L, -2, "rank");
    push_array(L, res.stage_bubble, res.n);
    lua_setfield(L, -2, "stage_bubble");
    push_array(L, res.peak_memory, res.n);
    lua_setfield(L, -2, "peak_memory");
    push_array(L, res.t_peak, res.n);
    lua_setfield(L, -2, "peak_time");
    push_array(L, res.static_memory, res.n);
    lua_setfield(L, -2, "static_memory");
    push_array(L, res.exposed_comm, res.n);
    lua_setfield(L, -2, "exposed_comm");
    push_fits(L, &res);
    lua_pushinteger(L, res.eng.events);
    lua_setfield(L, -2, "events");
    return 1;
}

void bind_register_run(lua_State *L)
{
    if (luaL_newmetatable(L, CTX_TYPE)) {
        lua_pushcfunction(L, ctx_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
    lua_pushcfunction(L, core_run);
    lua_setfield(L, -2, "run");
}
