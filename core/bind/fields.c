/* The known fields of every table the binding reads: one list per table,
 * the one place to add a field (a key missing here is rejected as unknown,
 * with a suggestion, by bind_check_fields). Lua sees the same lists as
 * core.fields.<table> (init.lua checks ps.run's top level with them before
 * it resolves the partition). Keep each list sorted, one field per line. */
#include "bind/bind.h"

/* One field per line keeps merges of new fields simple: */
/* clang-format off */

/* ps.run{...} (core/bind/run.c); params_json is added by init.lua;
 * sequence_parallel, tp_overlap, tp_comm and recompute* are read by
 * lua/pipesim/parallel.lua, which takes them out before core.run (tp
 * too, and gives it back: the core places the TP groups) */
const char *const bind_fields_run[] = {
    "backend",
    "bytes_log",
    "checkpoint",
    "chunk_placement",
    "cluster",
    "compute",
    "cp",
    "cp_comm_type",
    "cp_hierarchy",
    "db",
    "dp",
    "ep",
    "ep_comm_share",
    "ep_overlap",
    "etp",
    "faults",
    "fb_interference",
    "fold",
    "grad_sync",
    "iterations",
    "layers",
    "memory",
    "meta",
    "microbatches",
    "moe_dispatcher",
    "moe_imbalance",
    "name",
    "optimizer_time",
    "overlap_fb",
    "p2p",
    "params_json",
    "partition",
    "placement",
    "ranks",
    "recompute",
    "recompute_layers",
    "recompute_method",
    "recompute_modules",
    "record",
    "recv_timeout",
    "reshard_after_forward",
    "schedule",
    "sequence_parallel",
    "shard_group",
    "split_backward",
    "stages",
    "tags",
    "tp",
    "tp_comm",
    "tp_overlap",
    "virtual_stages",
    "warmup",
    "watchdog",
    "zero",
    NULL,
};

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
const char *const bind_fields_layer[] = {
    "act_bytes",
    "active_params",
    "bwd_flops",
    "bwd_input_flops",
    "bwd_input_time",
    "bwd_time",
    "bwd_weight_bytes",
    "bwd_weight_flops",
    "bwd_weight_time",
    "fwd_flops",
    "fwd_time",
    "in_bytes",
    "kept_bytes",
    "kind",
    "moe",
    "moe_bwd_expert_time",
    "moe_bwd_pre_time",
    "moe_combine_bytes",
    "moe_combine_grad_bytes",
    "moe_dispatch_bytes",
    "moe_dispatch_grad_bytes",
    "moe_expert_params",
    "moe_flex_nvl_share",
    "moe_flex_rdma_share",
    "moe_fwd_expert_time",
    "moe_fwd_pre_time",
    "mtp",
    "name",
    "out_bytes",
    "params",
    "recompute_time",
    "shape",
    "shared_params",
    "static_bytes",
    "tp_comm_time",
    "tp_exposed_time",
    "work_bytes",
    NULL,
};

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
