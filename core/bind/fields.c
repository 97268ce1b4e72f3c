/* The known fields of every table the binding reads: one list per table,
 * the one place to add a field (a key missing here is rejected as unknown,
 * with a suggestion, by bind_check_fields). Lua sees the same lists as
 * core.fields.<table> (init.lua checks ps.run's top level with them before
 * it resolves the partition). Keep each list sorted, one field per line. */
#include "bind/bind.h"

/* One field per line keeps merges of new fields simple: */
/* clang-format off */

/* What the Lua front end does with a field besides handing it to the core
 * (core.field_roles.<table>[name]: lua/pipesim/fields.lua and run_memo.lua
 * derive their lists from these, so no list is written twice):
 * ps.run's */
#define FR_LOWER 1u   /* read by the lowering (lua/pipesim/parallel.lua),
                       * taken out before core.run */
#define FR_TRIGGER 2u /* makes ps.run lower its layers (as FR_LOWER does) */
#define FR_PLAN 4u    /* read by parallel.prepare: a sweep keeps one lowered
                       * plan per combination of these values */
#define FR_CHECK 8u   /* read by core.check_run: a sweep's point with the
                       * values of one that passed is not checked again */
/* a layer's */
#define FR_MODEL 16u  /* the model's (ps.models), not read into the core's
                       * layer: parallel.lua's core view leaves it out */
#define FIELD_NAME(name, roles) name,
#define FIELD_ROLES(name, roles) roles,

/* ps.run{...} (core/bind/run.c); params_json is added by init.lua;
 * sequence_parallel, tp_overlap, tp_comm and recompute* are read by
 * lua/pipesim/parallel.lua, which takes them out before core.run (tp
 * too, and gives it back: the core places the TP groups) */
#define RUN_FIELDS(X) \
    X("backend", 0) \
    X("bytes_log", 0) \
    X("checkpoint", FR_PLAN | FR_CHECK) \
    X("chunk_placement", 0) \
    X("cluster", 0) \
    X("compute", 0) \
    X("cp", FR_LOWER | FR_PLAN | FR_CHECK) \
    X("cp_comm_type", FR_LOWER | FR_PLAN) \
    X("cp_hierarchy", FR_LOWER | FR_PLAN) \
    X("db", 0) \
    X("dp", FR_PLAN | FR_CHECK) \
    X("ep", FR_TRIGGER | FR_PLAN) \
    X("ep_comm_share", 0) \
    X("ep_overlap", FR_PLAN) \
    X("etp", FR_TRIGGER | FR_PLAN) \
    X("faults", 0) \
    X("fb_interference", 0) \
    X("fold", 0) \
    X("grad_sync", 0) \
    X("iterations", 0) \
    X("layers", 0) \
    X("memory", 0) \
    X("meta", 0) \
    X("microbatches", FR_CHECK) \
    X("moe_dispatcher", FR_LOWER | FR_PLAN) \
    X("moe_imbalance", FR_LOWER | FR_PLAN) \
    X("name", 0) \
    X("optimizer_time", 0) \
    X("overlap_fb", 0) \
    X("p2p", 0) \
    X("params_json", 0) \
    X("partition", 0) \
    X("placement", FR_PLAN) \
    X("ranks", FR_PLAN) \
    X("recompute", FR_LOWER | FR_PLAN) \
    X("recompute_layers", FR_LOWER | FR_PLAN) \
    X("recompute_method", FR_LOWER | FR_PLAN) \
    X("recompute_modules", FR_LOWER | FR_PLAN) \
    X("record", 0) \
    X("recv_timeout", 0) \
    X("reshard_after_forward", 0) \
    X("schedule", 0) \
    X("sequence_parallel", FR_LOWER | FR_PLAN) \
    X("shard_group", 0) \
    X("split_backward", 0) \
    X("stages", FR_PLAN | FR_CHECK) \
    X("tags", 0) \
    X("tp", FR_LOWER | FR_PLAN | FR_CHECK) \
    X("tp_comm", FR_LOWER | FR_PLAN) \
    X("tp_overlap", FR_LOWER | FR_PLAN) \
    X("virtual_stages", FR_CHECK) \
    X("warmup", 0) \
    X("watchdog", 0) \
    X("zero", 0) \

const char *const bind_fields_run[] = {RUN_FIELDS(FIELD_NAME) NULL};
static const unsigned roles_run[] = {RUN_FIELDS(FIELD_ROLES) 0};

/* ps.run{ tp_comm = {...} }: how the TP collectives run (read by
 * lua/pipesim/parallel.lua; without it, as every collective does:
 * par/pass.h par_protocol) */
const char *const bind_fields_tp_comm[] = {
    "algorithm",
    "protocol",
    NULL,
};

/* ps.layout{...} (core/bind/layout.c) */
const char *const bind_fields_layout[] = {
    "cluster",
    "cp",
    "dp",
    "ep",
    "etp",
    "placement",
    "pp",
    "ranks",
    "shard",
    "shard_group",
    "tp",
    "vp",
    "world",
    NULL,
};

/* ps.run{ memory = {...} }: bytes per parameter */
const char *const bind_fields_memory[] = {
    "grad_bytes",
    "optimizer_bytes",
    "weight_bytes",
    NULL,
};

/* ps.run{ grad_sync = {...} } */
const char *const bind_fields_grad_sync[] = {
    "algorithm",
    "bucket",
    "bucketed",
    "first_bucket",
    "overlap",
    "overlap_param_gather",
    "param_gather_start",
    "protocol",
    NULL,
};

/* each entry of ps.run{ layers = {...} }; kind, shape, shared_params,
 * active_params, moe and mtp come from ps.models (lua/pipesim/models/
 * transformer.lua, moe.lua; parallel.lua lowers layers with a shape
 * before the core) */
#define LAYER_FIELDS(X) \
    X("act_bytes", 0) \
    X("active_params", FR_MODEL) \
    X("bwd_flops", 0) \
    X("bwd_input_flops", 0) \
    X("bwd_input_time", 0) \
    X("bwd_time", 0) \
    X("bwd_weight_bytes", 0) \
    X("bwd_weight_flops", 0) \
    X("bwd_weight_time", 0) \
    X("fwd_flops", 0) \
    X("fwd_time", 0) \
    X("in_bytes", 0) \
    X("kept_bytes", 0) \
    X("kind", FR_MODEL) \
    X("moe", FR_MODEL) \
    X("moe_bwd_expert_time", 0) \
    X("moe_bwd_pre_time", 0) \
    X("moe_combine_bytes", 0) \
    X("moe_combine_grad_bytes", 0) \
    X("moe_dispatch_bytes", 0) \
    X("moe_dispatch_grad_bytes", 0) \
    X("moe_expert_params", 0) \
    X("moe_flex_nvl_share", 0) \
    X("moe_flex_rdma_share", 0) \
    X("moe_fwd_expert_time", 0) \
    X("moe_fwd_pre_time", 0) \
    X("mtp", FR_MODEL) \
    X("name", 0) \
    X("out_bytes", 0) \
    X("params", 0) \
    X("recompute_time", 0) \
    X("shape", FR_MODEL) \
    X("shared_params", 0) \
    X("static_bytes", 0) \
    X("tp_comm_time", 0) \
    X("tp_exposed_time", 0) \
    X("work_bytes", 0) \

const char *const bind_fields_layer[] = {LAYER_FIELDS(FIELD_NAME) NULL};
static const unsigned roles_layer[] = {LAYER_FIELDS(FIELD_ROLES) 0};

/* ps.cluster{...} (core/bind/cluster.c) */
const char *const bind_fields_cluster[] = {
    "compute_capability",
    "cpu_vendor",
    "device",
    "devices",
    "gpus_per_node",
    "inter",
    "intra",
    "link",
    "links",
    "name",
    "nccl_channels",
    "nics_per_node",
    "nodes",
    "nvls",
    "oversubscription",
    "ranks",
    "sharing",
    "switches",
    NULL,
};

/* ps.cluster{ device = {...} } and each devices[r]; name comes from
 * ps.clusters.device */
const char *const bind_fields_device[] = {
    "efficiency",
    "flops",
    "memory",
    "name",
    NULL,
};

/* ps.cluster{ link | intra | inter = {...} } */
const char *const bind_fields_link[] = {
    "bandwidth",
    "latency",
    NULL,
};

/* each entry of ps.cluster{ links = {...} }: { a, b, bandwidth = ... } */
const char *const bind_fields_links_entry[] = {
    "[1]",
    "[2]",
    "bandwidth",
    "duplex",
    "latency",
    NULL,
};

/* ps.collective{...} (core/bind/collective.c); params_json is added by
 * init.lua */
const char *const bind_fields_collective[] = {
    "algorithm",
    "backend",
    "bytes",
    "bytes_log",
    "candidates",
    "chunks",
    "cluster",
    "data",
    "db",
    "faults",
    "inject",
    "iterations",
    "meta",
    "name",
    "op",
    "p2p",
    "params_json",
    "protocol",
    "ranks",
    "ranks_per_node",
    "record",
    "recv_timeout",
    "root",
    "seed",
    "simulate",
    "slots",
    "tags",
    "verify",
    "warmup",
    "watchdog",
    NULL,
};

/* ps.run's and ps.collective's meta = {...}: added by init.lua (from
 * tags, the model's shape and the enclosing ps.sweep), read by
 * core/bind/sweep.c into rec_meta */
const char *const bind_fields_meta[] = {
    "efficiency",
    "global_batch",
    "micro_batch",
    "model",
    "point",
    "point_index",
    "seq_length",
    "sweep",
    "tags",
    NULL,
};

/* meta.efficiency (lua/pipesim/efficiency.lua, core/bind/efficiency.c) */
const char *const bind_fields_efficiency[] = {
    "gpus",
    "hardware_flops",
    "model_flops",
    "note",
    "peak_flops",
    "precision",
    "tokens",
    NULL,
};

/* each entry of ps.run{ faults = {...} } and ps.collective's
 * (core/bind/fault.c) */
const char *const bind_fields_fault[] = {
    "down",
    "from",
    "link",
    "rank",
    "slow",
    "stall",
    NULL,
};

/* clang-format on */

static const struct {
    const char *table;
    const char *const *fields;
} lists[] = {
    {"run", bind_fields_run},
    {"memory", bind_fields_memory},
    {"grad_sync", bind_fields_grad_sync},
    {"tp_comm", bind_fields_tp_comm},
    {"layout", bind_fields_layout},
    {"layer", bind_fields_layer},
    {"cluster", bind_fields_cluster},
    {"device", bind_fields_device},
    {"link", bind_fields_link},
    {"links_entry", bind_fields_links_entry},
    {"collective", bind_fields_collective},
    {"fault", bind_fields_fault},
    {"meta", bind_fields_meta},
    {"efficiency", bind_fields_efficiency},
};

/* [-0, +1] */
void bind_push_fields(lua_State *L)
{
    int n = (int)(sizeof lists / sizeof lists[0]);
    lua_createtable(L, 0, n);
    for (int i = 0; i < n; i++) {
        lua_newtable(L);
        for (int j = 0; lists[i].fields[j]; j++) {
            lua_pushstring(L, lists[i].fields[j]);
            lua_rawseti(L, -2, j + 1);
        }
        lua_setfield(L, -2, lists[i].table);
    }
}

static const struct {
    unsigned bit;
    const char *name;
} role_names[] = {{FR_LOWER, "lower"},
                  {FR_TRIGGER, "trigger"},
                  {FR_PLAN, "plan"},
                  {FR_CHECK, "check"},
                  {FR_MODEL, "model"}};

/* [-0, +1] { name = { role = true, ... } } for the fields of list with a
 * role */
static void push_roles(lua_State *L, const char *const *list,
                       const unsigned *roles)
{
    lua_newtable(L);
    for (int j = 0; list[j]; j++) {
        if (!roles[j])
            continue;
        lua_newtable(L);
        for (size_t b = 0; b < sizeof role_names / sizeof role_names[0]; b++)
            if (roles[j] & role_names[b].bit) {
                lua_pushboolean(L, 1);
                lua_setfield(L, -2, role_names[b].name);
            }
        lua_setfield(L, -2, list[j]);
    }
}

/* [-0, +1] */
void bind_push_field_roles(lua_State *L)
{
    lua_createtable(L, 0, 2);
    push_roles(L, bind_fields_run, roles_run);
    lua_setfield(L, -2, "run");
    push_roles(L, bind_fields_layer, roles_layer);
    lua_setfield(L, -2, "layer");
}
