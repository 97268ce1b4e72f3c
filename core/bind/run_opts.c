/* ps.run's step options, read for core.run (bind/run.c): the schedule (a
 * name or a custom list of actions), the chunk placement, the overlapped
 * actions' costs, bytes per parameter, the gradient sync and its sharding;
 * and the scratch arrays they and run.c leave on the Lua stack. Apart
 * from run.c, whose layer reader and sealed layers are the other half of
 * reading ps.run's table. */
#include <ctype.h>
#include <lauxlib.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/unit.h"
#include "bind/bind.h"
#include "bind/run_opts.h"
#include "coll/coll.h"
#include "par/dp.h"
#include "par/layout.h"
#include "step/pipe.h"

#define MAX_RANKS PAR_MAX_RANKS /* as in ps.cluster (net/net.h) */

/* [-0, +1] n zeroed elements of size bytes in a userdata left on the
 * stack: freed by the collector, so an error raised half way leaks
 * nothing. */
void *bind_run_scratch(lua_State *L, size_t n, size_t size)
{
    void *p = lua_newuserdatauv(L, n * size + 1, 0);
    memset(p, 0, n * size + 1);
    return p;
}

/* [-0, +(0|1)] chunk_placement: "loop", "v", or a list giving each model stage
 * (in order, from stage 0) as { rank, chunk }, counted from 0; default the
 * schedule's own. A list leaves its array (*place) as scratch on the
 * stack; sched_place_check says whether it is one of the rules. */
enum sched_placement bind_run_placement(lua_State *L, int idx,
                                        const pipe_config *cfg,
                                        const int32_t **place)
{
    *place = NULL;
    lua_getfield(L, idx, "chunk_placement");
    int list = lua_istable(L, -1);
    lua_pop(L, 1);
    if (list) {
        int32_t S = cfg->p * cfg->v;
        lua_getfield(L, idx, "chunk_placement");
        int t = lua_gettop(L);
        lua_Integer n = bind_list_len(L, t, "chunk_placement");
        if (n != S)
            luaL_error(L,
                       "field 'chunk_placement': %I entries for %d stages "
                       "(stages x virtual_stages)",
                       n, (int)S);
        int32_t *a = bind_run_scratch(L, (size_t)S * 2, sizeof *a);
        lua_insert(L, t); /* the scratch below the list */
        for (int32_t s = 0; s < S; s++) {
            lua_geti(L, t + 1, s + 1);
            int ok = lua_istable(L, -1) && lua_rawlen(L, -1) == 2;
            for (int k = 0; ok && k < 2; k++) {
                lua_geti(L, -1, k + 1);
                int isnum = 0;
                lua_Integer x = lua_tointegerx(L, -1, &isnum);
                ok = isnum && x >= INT32_MIN && x <= INT32_MAX;
                a[2 * s + k] = ok ? (int32_t)x : 0;
                lua_pop(L, 1);
            }
            if (!ok)
                luaL_error(L,
                           "field 'chunk_placement': entry %d (stage %d) must "
                           "be { rank, chunk }, integers from 0",
                           (int)s + 1, (int)s);
            lua_pop(L, 1);
        }
        lua_pop(L, 1); /* the list; the scratch stays */
        enum sched_placement rule;
        ps_err err;
        if (sched_place_check(a, cfg->p, cfg->v, &rule, &err))
            luaL_error(L, "field 'chunk_placement': %s", err.msg);
        *place = a;
        return rule;
    }
    const char *pl = bind_string(L, idx, "chunk_placement");
    if (!pl)
        return sched_default_placement(cfg->schedule);
    if (strcmp(pl, "loop") == 0)
        return SCHED_LOOP;
    if (strcmp(pl, "v") == 0)
        return SCHED_V;
    luaL_error(L,
               "field 'chunk_placement': unknown placement '%s' (expected "
               "loop, v or a list of { rank, chunk } per stage)",
               pl);
    return SCHED_LOOP;
}

/* [-0, +(p+2)] A custom schedule: one list of action strings per pipeline rank.
 */
static void read_custom(lua_State *L, int idx, pipe_config *cfg,
                        const sched_action ***orders, int32_t **counts)
{
    int32_t p = cfg->p;
    lua_Integer np = bind_list_len(L, idx, "schedule");
    if (np != p)
        luaL_error(L, "field 'schedule': %I action lists for %d stages", np,
                   (int)p);
    *orders = bind_run_scratch(L, (size_t)p, sizeof **orders);
    *counts = bind_run_scratch(L, (size_t)p, sizeof **counts);
    for (int32_t r = 0; r < p; r++) {
        lua_geti(L, idx, r + 1);
        if (!lua_istable(L, -1))
            luaL_error(L,
                       "field 'schedule': entry %d must be a list of "
                       "actions such as {\"F0\", \"B0\"}",
                       (int)r + 1);
        int list = lua_gettop(L);
        char name[32];
        snprintf(name, sizeof name, "schedule[%d]", (int)r + 1);
        /* sched_check_custom bounds a list by 3 m v actions; checked here
         * in 64 bits before the count is narrowed */
        lua_Integer len = bind_list_len(L, list, name);
        if (len > INT32_MAX / 4)
            luaL_error(L, "field '%s' has %I actions, too many", name, len);
        int32_t n = (int32_t)len;
        sched_action *a = bind_run_scratch(L, (size_t)n, sizeof *a);
        lua_rotate(L, list, 1); /* keep the scratch below the list */
        list = lua_gettop(L);
        for (int32_t i = 0; i < n; i++) {
            lua_geti(L, list, i + 1);
            const char *text =
                lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
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

/* [-0, +0] t.field, a string naming one of names (NULL-terminated; the
 * first when absent): its index, which is the value of the field's enum.
 * *given says whether the field was there. */
static int read_enum(lua_State *L, int t, const char *field,
                     const char *const *names, int *given)
{
    const char *s = bind_string(L, t, field);
    *given = s != NULL;
    int n = 0;
    for (; names[n]; n++)
        if (!s || strcmp(s, names[n]) == 0)
            return n;
    luaL_Buffer b; /* "a, b or c" */
    luaL_buffinit(L, &b);
    for (int k = 0; k < n; k++) {
        luaL_addstring(&b, names[k]);
        luaL_addstring(&b, k + 2 < n ? ", " : k + 1 < n ? " or " : "");
    }
    luaL_pushresult(&b);
    return luaL_error(L, "field '%s': unknown value '%s' (expected %s)", field,
                      s, lua_tostring(L, -1));
}

/* grad_sync.bucketed: which chunks are cut into buckets (enum
 * par_bucketed, in its order) */
static const char *const bucketed_names[] = {"all", "first", "none", NULL};

/* grad_sync.param_gather_start: when overlap_param_gather's all-gathers go
 * out (enum par_pg_start, in its order) */
static const char *const pg_start_names[] = {"forward", "step", NULL};

/* [-0, +0] zero (ZeRO's stage 0..3), shard_group (hybrid sharding: the
 * ranks one shard spans) and reshard_after_forward (ZeRO-3: FSDP2's
 * bool or int) into cfg, each refused where it cannot apply. cfg->dp and
 * cfg->cp are read. */
/* Refuses field's value k where it does not divide n; of formats n
 * ("the data-parallel size %d"). */
static void must_divide(lua_State *L, const char *field, long long k, int32_t n,
                        const char *of)
{
    if (n % k == 0)
        return;
    const char *what = lua_pushfstring(L, of, (int)n);
    luaL_error(L, "field '%s': %d does not divide %s", field, (int)k, what);
}

static void read_sharding(lua_State *L, pipe_config *cfg)
{
    long long zero = 0, group = 0, reshard = 0;
    /* the group sharded is dp x cp (Megatron's dp-cp group) */
    int32_t dp = cfg->dp * (cfg->cp > 1 ? cfg->cp : 1);
    bind_int(L, 1, "zero", 0, 3, &zero); /* ZeRO's stage (par/layout.h) */
    cfg->zero = (int)zero;
    if (bind_int(L, 1, "shard_group", 1, MAX_RANKS, &group)) {
        if (zero == 0)
            luaL_error(L, "field 'shard_group' needs zero = 1, 2 or 3 "
                          "(hybrid sharding shards within groups of "
                          "shard_group data-parallel ranks)");
        must_divide(L, "shard_group", group, dp, "the data-parallel size %d");
    }
    /* Megatron shards the experts' parameters over the expert-data-parallel
     * group, the rest over dp x cp: the ZeRO-2/3 passes know the second */
    if (zero >= 2 && cfg->ep > 1)
        luaL_error(L,
                   "zero = %d with ep = %d is not modelled (the experts' "
                   "shards span the expert-data-parallel group)",
                   (int)zero, (int)cfg->ep);
    cfg->shard_group = (int32_t)group;
    int32_t shard = group > 0 ? (int32_t)group : dp;
    int t = lua_getfield(L, 1, "reshard_after_forward");
    lua_pop(L, 1);
    if (t != LUA_TNIL && zero != 3)
        luaL_error(L,
                   "field 'reshard_after_forward' needs zero = 3 "
                   "(parameters sharded: FSDP's FULL_SHARD), got zero = "
                   "%d",
                   (int)zero);
    if (t == LUA_TBOOLEAN) {
        int b = 0;
        bind_boolean(L, 1, "reshard_after_forward", &b);
        reshard = b ? 0 : 1;
    } else if (t != LUA_TNIL) {
        bind_int(L, 1, "reshard_after_forward", 1, MAX_RANKS, &reshard);
        must_divide(L, "reshard_after_forward", reshard, shard,
                    "the shard group of %d ranks");
    }
    cfg->reshard = (int32_t)reshard;
}

/* A sub-table's quantities, each with its pipe_config slot (a double),
 * unit and bound (> 0 when strict, else >= 0): read by read_quantities,
 * over pipe_config_init's defaults when absent. */
struct quantity_field {
    const char *path; /* "table.field", as messages name it */
    size_t off;
    enum unit_kind unit;
    int strict;
};

#define NQUANTITIES(a) (sizeof(a) / sizeof(a)[0])

static const struct quantity_field grad_sync_sizes[] = {
    {"grad_sync.bucket", offsetof(pipe_config, bucket_bytes), UNIT_BYTES, 1},
    {"grad_sync.first_bucket", offsetof(pipe_config, first_bucket_bytes),
     UNIT_BYTES, 1},
};

/* bytes per parameter */
static const struct quantity_field memory_sizes[] = {
    {"memory.weight_bytes", offsetof(pipe_config, weight_bytes), UNIT_BYTES, 0},
    {"memory.grad_bytes", offsetof(pipe_config, grad_bytes), UNIT_BYTES, 0},
    {"memory.optimizer_bytes", offsetof(pipe_config, optimizer_bytes),
     UNIT_BYTES, 0},
};

/* [-0, +0] each of list's n fields of the table at t into cfg */
static void read_quantities(lua_State *L, int t,
                            const struct quantity_field *list, size_t n,
                            pipe_config *cfg)
{
    for (size_t i = 0; i < n; i++)
        bind_quantity_min(L, t, list[i].path, list[i].unit, 0, list[i].strict,
                          (double *)((char *)cfg + list[i].off));
}

/* [-0, +0] grad_sync = { bucket, bucketed, first_bucket, algorithm,
 * overlap, overlap_param_gather, param_gather_start }, zero,
 * optimizer_time, over pipe_config_init's defaults. */
void bind_run_grad_sync(lua_State *L, pipe_config *cfg)
{
    int pg_start_given = 0;
    if (bind_table(L, 1, "grad_sync",
                   "such as { bucket = \"25 MB\", overlap = true }")) {
        int t = lua_gettop(L);
        bind_check_fields(L, t, "grad_sync", bind_fields_grad_sync);
        read_quantities(L, t, grad_sync_sizes, NQUANTITIES(grad_sync_sizes),
                        cfg);
        int given = 0;
        cfg->grad_bucketed =
            read_enum(L, t, "grad_sync.bucketed", bucketed_names, &given);
        bind_boolean(L, t, "grad_sync.overlap", &cfg->overlap);
        bind_boolean(L, t, "grad_sync.overlap_param_gather",
                     &cfg->overlap_param_gather);
        cfg->param_gather_start =
            read_enum(L, t, "grad_sync.param_gather_start", pg_start_names,
                      &pg_start_given);
        const char *algo = bind_string(L, t, "grad_sync.algorithm");
        ps_err err;
        if (algo &&
            coll_parse_algo(COLL_ALLREDUCE, algo, &cfg->grad_algorithm, &err))
            luaL_error(L, "field 'grad_sync.algorithm': %s", err.msg);
        /* the protocol when the user asks for one; else the rule of every
         * collective (par_protocol: NCCL's auto on NCCL's hardware) */
        const char *proto = bind_string(L, t, "grad_sync.protocol");
        if (proto && coll_parse_proto(proto, &cfg->grad_protocol, &err))
            luaL_error(L, "field 'grad_sync.protocol': %s", err.msg);
        if (proto && cfg->grad_protocol != COLL_PROTO_NONE &&
            cfg->grad_algorithm != COLL_AUTO &&
            !coll_algo_has_proto(cfg->grad_algorithm))
            luaL_error(L,
                       "field 'grad_sync.protocol': algorithm '%s' has no "
                       "protocols (ring, tree and nvls have)",
                       algo);
        lua_pop(L, 1);
    }
    read_sharding(L, cfg);
    /* Megatron asserts both (arguments.py: "--overlap-param-gather only
     * supported with distributed optimizer", "--overlap-grad-reduce should
     * be turned on when using --overlap-param-gather") */
    if (cfg->overlap_param_gather && (!cfg->zero || !cfg->overlap))
        luaL_error(L, "field 'grad_sync.overlap_param_gather' needs %s",
                   !cfg->zero ? "zero = 1 (the distributed optimizer)"
                              : "grad_sync.overlap = true");
    if (pg_start_given && !cfg->overlap_param_gather)
        luaL_error(L, "field 'grad_sync.param_gather_start' needs "
                      "grad_sync.overlap_param_gather = true (it says when "
                      "those all-gathers go out)");
    if (cfg->overlap_param_gather && cfg->zero > 1)
        luaL_error(L,
                   "field 'grad_sync.overlap_param_gather' is modelled with "
                   "zero = 1 only, got zero = %d (%s)",
                   cfg->zero,
                   cfg->zero == 3 ? "zero = 3 gathers each layer before its "
                                    "forward, prefetched"
                                  : "zero = 2's all-gather follows the "
                                    "optimizer step");
    if (!cfg->overlap && cfg->zero > 1)
        luaL_error(L,
                   "field 'grad_sync.overlap' = false is not modelled with "
                   "zero = %d: its reduce-scatters run during each backward",
                   cfg->zero);
    cfg->optimizer_seconds = 0;
    bind_quantity_min(L, 1, "optimizer_time", UNIT_SECONDS, 0, 0,
                      &cfg->optimizer_seconds);
}

/* The schedule field: a name (as users type it: "1F1B", "GPipe") or a
 * custom list of actions per stage (its arrays in *orders, *counts). */
void bind_run_schedule(lua_State *L, pipe_config *cfg,
                       const sched_action ***orders, int32_t **counts)
{
    lua_getfield(L, 1, "schedule");
    if (lua_istable(L, -1)) {
        cfg->schedule = SCHED_CUSTOM;
        cfg->schedule_name = "custom";
        read_custom(L, lua_gettop(L), cfg, orders, counts);
        cfg->custom = *orders;
        cfg->ncustom = *counts;
    } else {
        if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
            bind_field_error(L, "schedule",
                             "must be a schedule name or a list of actions "
                             "per stage",
                             -1);
        /* names as users type them: "1F1B", "GPipe", "Interleaved" */
        char name[32] = "1f1b";
        size_t len = 0;
        const char *given = lua_tolstring(L, -1, &len);
        if (given && strlen(given) != len)
            bind_field_error(L, "schedule", "must not contain a NUL byte", -1);
        if (given && len < sizeof name) {
            for (size_t i = 0; i <= len; i++)
                name[i] = (char)tolower((unsigned char)given[i]);
        } else if (given) {
            snprintf(name, sizeof name, "%.31s", given); /* too long: unknown */
        }
        ps_err err;
        if (sched_parse(name, &cfg->schedule, &err))
            luaL_error(L, "field 'schedule': %s", err.msg);
        cfg->schedule_name = sched_name(cfg->schedule);
    }
}

/* The overlapped actions' costs: overlap_fb, fb_interference and the
 * all-to-alls' share of the SMs. */
void bind_run_overlap(lua_State *L, pipe_config *cfg)
{
    /* overlapped FB actions (sched_fb_time): a measured time, or the
     * share of the shorter action that is not hidden (pipe_config_init's
     * default 1: none is) */
    cfg->fb_given = bind_quantity_min(L, 1, "overlap_fb", UNIT_SECONDS, 0, 1,
                                      &cfg->overlap_fb) |
                    bind_quantity_min(L, 1, "fb_interference", UNIT_RATIO, 0, 0,
                                      &cfg->fb_interference);
    /* the SMs' share an overlapped all-to-all takes (par/ep.h) */
    if (bind_quantity_min(L, 1, "ep_comm_share", UNIT_RATIO, 0, 0,
                          &cfg->ep_comm_share) &&
        cfg->ep_comm_share >= 1)
        luaL_error(L,
                   "field 'ep_comm_share' must be below 1 (the share of "
                   "SMs the all-to-alls take), got %f",
                   cfg->ep_comm_share);
    /* Megatron's combined 1F1B all-to-all overlap (par/ep.h) */
    bind_boolean(L, 1, "ep_overlap", &cfg->ep_overlap);
}

/* memory = { weight_bytes, grad_bytes, optimizer_bytes }: bytes per
 * parameter. */
void bind_run_memory(lua_State *L, pipe_config *cfg)
{
    if (bind_table(L, 1, "memory",
                   "of bytes per parameter such as { weight_bytes = 2 }")) {
        int t = lua_gettop(L);
        bind_check_fields(L, t, "memory", bind_fields_memory);
        read_quantities(L, t, memory_sizes, NQUANTITIES(memory_sizes), cfg);
        lua_pop(L, 1);
    }
}

/* partition: resolved by the Lua layer into p * v layer counts, each in
 * 1..nlayers (the sum is checked by pipe_stage_costs). */
void bind_run_partition(lua_State *L, pipe_config *cfg)
{
    int32_t nl = cfg->nlayers;
    int32_t nstages = cfg->p * cfg->v;
    if (!bind_table(L, 1, "partition", "of layer counts"))
        luaL_error(L, "field 'partition' must be a list of layer "
                      "counts");
    lua_Integer nparts = bind_list_len(L, -1, "partition");
    if (nparts != nstages)
        luaL_error(L,
                   "field 'partition' has %d entries, expected %d "
                   "(one per stage%s)",
                   (int)nparts, (int)nstages,
                   cfg->v > 1 ? " and virtual stage" : "");
    int32_t *partition =
        bind_run_scratch(L, (size_t)nstages, sizeof *partition);
    lua_rotate(L, -2, 1);
    for (int32_t s = 0; s < nstages; s++) {
        lua_geti(L, -1, s + 1);
        int ok;
        lua_Integer c = lua_tointegerx(L, -1, &ok);
        /* the field's name is made only for the message (a pushfstring
         * per entry was 1.2 k instructions of every run) */
        if (!ok || lua_type(L, -1) != LUA_TNUMBER || c < 1 || c > nl) {
            long long cc;
            int at = lua_gettop(L);
            bind_check_int(L, at,
                           lua_pushfstring(L, "partition[%d]", (int)s + 1), 1,
                           nl, &cc);
        }
        partition[s] = (int32_t)c;
        lua_pop(L, 1);
    }
    cfg->partition = partition;
    lua_pop(L, 1);
}
