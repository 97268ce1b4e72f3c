/* libFuzzer target: the scenario front end. The input decodes into a Lua
 * table (field names from pipesim's vocabulary or raw bytes; values nil,
 * booleans, integers near every limit, NaN and infinities, quantity strings,
 * nested tables, functions) handed to ps.run, ps.cluster, ps.collective,
 * ps.models.transformer, ps.models.preset or ps.clusters.dgx (whose
 * results are run in turn, models with cp 1, 2 or 4), under pcall in a Lua
 * state (fuzz_state: kept for 64 inputs). Checks: every failure is a message (a
 * non-empty string: the CLI prints it as one line, control characters escaped),
 * a run's makespan is a number >= 0, and a crash, leak or hang is a failure
 * too.
 *
 * Sizes are bounded so that an input costs milliseconds: counts are small
 * integers or values the range checks reject, and the driver lowers a size
 * field between 64 and 2^31 to 64 (a valid huge run is slow, not a bug);
 * data-mode collectives carry at most 16 MiB. `db` fields are dropped:
 * runs record into a temporary database. */
#include <math.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const keys[] = {
    /* ps.run */
    "name", "cluster", "layers", "stages", "partition", "schedule",
    "microbatches", "virtual_stages", "checkpoint", "p2p", "record", "memory",
    "ranks", "dp", "placement", "grad_sync", "zero", "optimizer_time",
    "split_backward", "tp", "sequence_parallel", "recompute",
    "recompute_method", "recompute_layers", "tp_overlap", "faults",
    "recv_timeout", "shard_group", "reshard_after_forward",
    /* ps.cluster, devices, links */
    "device", "devices", "link", "nodes", "gpus_per_node", "intra", "inter",
    "nics_per_node", "oversubscription", "links", "sharing", "switches",
    "flops", "efficiency", "bandwidth", "latency", "duplex", "preset",
    /* memory, grad_sync, layers */
    "weight_bytes", "grad_bytes", "optimizer_bytes", "fwd_flops", "bwd_flops",
    "fwd_time", "bwd_time", "params", "act_bytes", "out_bytes",
    "bwd_input_time", "bwd_weight_time", "recompute_time", "kept_bytes",
    "bucket_bytes", "overlap", "algorithm", "buckets",
    /* ps.collective, faults */
    "op", "bytes", "root", "verify", "data", "seed", "candidates", "chunks",
    "ranks_per_node", "rank", "stall", "slow", "from", "down", "at", "hidden",
    "seq", "heads", "vocab", "batch",
    /* models (ps.models.transformer shapes, presets) */
    "microbatch", "kv_heads", "head_dim", "ffn_hidden", "dtype", "swiglu",
    "tied", "bias", "norm", "position", "max_positions", "dropout",
    "flash_attention",
    /* context parallelism (lua/pipesim/cp.lua) */
    "cp", "cp_comm_type", "cp_hierarchy",
    /* expert parallelism (ps.run, layers, MoE shapes) */
    "ep", "etp", "moe_imbalance", "moe_dispatcher", "ep_comm_share",
    "ep_overlap", "moe_dispatch_bytes", "moe_combine_bytes",
    "moe_dispatch_grad_bytes", "moe_combine_grad_bytes", "moe_fwd_pre_time",
    "moe_fwd_expert_time", "moe_bwd_pre_time", "moe_bwd_expert_time",
    "moe_expert_params", "experts", "topk", "expert_ffn", "moe"};
#define NKEYS (sizeof keys / sizeof keys[0])

static const char *const strings[] = {"1f1b",
                                      "gpipe",
                                      "GPipe",
                                      "interleaved",
                                      "zb_h1",
                                      "zb_h2",
                                      "afab",
                                      "F0",
                                      "B1",
                                      "B0.c1",
                                      "W0",
                                      "R0",
                                      "F99999999999",
                                      "allreduce",
                                      "reduce_scatter",
                                      "allgather",
                                      "broadcast",
                                      "reduce",
                                      "ring",
                                      "tree",
                                      "double_binary_tree",
                                      "halving_doubling",
                                      "direct",
                                      "hierarchical",
                                      "pipeline",
                                      "auto",
                                      "all",
                                      "fifo",
                                      "fair",
                                      "rendezvous",
                                      "eager",
                                      "events",
                                      "summary",
                                      "none",
                                      "params",
                                      "flops",
                                      "time",
                                      "p2p",
                                      "all_gather",
                                      "a2a",
                                      "a2a+p2p",
                                      "dp_inner",
                                      "pp_inner",
                                      "full",
                                      "selective",
                                      "uniform",
                                      "block",
                                      "5 us",
                                      "1 ms",
                                      "2 s",
                                      "0 s",
                                      "-1 s",
                                      "64 KiB",
                                      "1 MiB",
                                      "16 MB",
                                      "80 GiB",
                                      "1e30 B",
                                      "50 GB/s",
                                      "400 Gb/s",
                                      "0 B/s",
                                      "312 TFLOPS",
                                      "1.5 TFLOP",
                                      "1e3 FLOP",
                                      "nan",
                                      "inf",
                                      "1e999 s",
                                      "",
                                      " ",
                                      "at 1 ms",
                                      "H100",
                                      "A100",
                                      "0,1,2,3",
                                      "x",
                                      "spine",
                                      "3 TFLOPs",
                                      "B0",
                                      "F1",
                                      "dualpipe",
                                      "alltoall",
                                      "flex"};
#define NSTRINGS (sizeof strings / sizeof strings[0])

static const double specials[] = {
    -1,           0,    1,     2,      3,    4,   8,
    16,           -0.0, 0.5,   1e-300, 1e12, 2e9, 4294967304.0,
    2147483648.0, 1.5,  1e308, -1e308, 65,   1e6, 9007199254740993.0,
    -2147483648.0};
#define NSPECIALS (sizeof specials / sizeof specials[0])

/* [-0, +1] pushes one value decoded from in */
static void push_value(lua_State *L, fuzz_in *in, int depth);

/* [-0, +1] pushes a table: a list part, then keyed fields */
static void push_table(lua_State *L, fuzz_in *in, int depth)
{
    lua_newtable(L);
    int nlist = (int)(fuzz_byte(in) % 7);
    for (int i = 1; i <= nlist; i++) {
        push_value(L, in, depth + 1);
        lua_seti(L, -2, i); /* a nil leaves a hole: sparse lists */
    }
    int nkeys = (int)(fuzz_byte(in) % 8);
    for (int i = 0; i < nkeys; i++) {
        unsigned k = fuzz_byte(in);
        if (k < 232) {
            lua_pushstring(L, keys[k % NKEYS]);
        } else if (k < 244) {
            lua_pushinteger(L, (lua_Integer)(k - 236)); /* -4 .. 7 */
        } else {
            char raw[8];
            int len = (int)(fuzz_byte(in) % sizeof raw);
            for (int j = 0; j < len; j++)
                raw[j] = (char)fuzz_byte(in);
            lua_pushlstring(L, raw, (size_t)len);
        }
        push_value(L, in, depth + 1);
        lua_settable(L, -3);
    }
}

static void push_value(lua_State *L, fuzz_in *in, int depth)
{
    unsigned t = fuzz_byte(in);
    switch (t % 13) {
    case 0: lua_pushnil(L); break;
    case 1: lua_pushboolean(L, (int)(t >> 4) & 1); break;
    case 2:
    case 3: lua_pushinteger(L, (lua_Integer)(fuzz_byte(in) % 24) - 2); break;
    case 4: {
        /* integers at the edges of int32 and int64 */
        static const lua_Integer edges[] = {INT32_MAX,
                                            (lua_Integer)INT32_MAX + 1,
                                            (lua_Integer)1 << 32,
                                            ((lua_Integer)1 << 32) + 8,
                                            INT64_MAX,
                                            INT64_MIN,
                                            -1,
                                            (lua_Integer)INT32_MIN,
                                            ((lua_Integer)1 << 20) + 1,
                                            ((lua_Integer)1 << 31) + 3};
        lua_pushinteger(L, edges[fuzz_byte(in) % 10]);
        break;
    }
    case 5: lua_pushnumber(L, specials[fuzz_byte(in) % NSPECIALS]); break;
    case 6: {
        static const double odd[] = {NAN, INFINITY, -INFINITY};
        lua_pushnumber(L, odd[fuzz_byte(in) % 3]);
        break;
    }
    case 7:
    case 8: lua_pushstring(L, strings[fuzz_byte(in) % NSTRINGS]); break;
    case 9: {
        char raw[16];
        int len = (int)(fuzz_byte(in) % sizeof raw);
        for (int j = 0; j < len; j++)
            raw[j] = (char)fuzz_byte(in);
        lua_pushlstring(L, raw, (size_t)len); /* may hold "\0" */
        break;
    }
    case 10:
    case 11:
        if (depth < 4)
            push_table(L, in, depth);
        else
            lua_pushinteger(L, 1);
        break;
    default:
        lua_getglobal(L, "FUZZ_FNS");
        lua_geti(L, -1, 1 + (lua_Integer)(fuzz_byte(in) % 4));
        lua_remove(L, -2);
    }
}

/* Runs spec.kind's function on spec under pcall and checks that a failure
 * is one line; the cluster field, when a table, goes through ps.cluster
 * first (its failure is checked the same way). */
static const char driver[] =
    "FUZZ_FNS = { function(r, i) return r * 1000 + i end,\n"
    "  function() error('data failed') end,\n"
    "  function() return 'x' end, function() return 0 / 0 end }\n"
    "local SIZE = { stages = 1, microbatches = 1, virtual_stages = 1,\n"
    "  dp = 1, tp = 1, ranks = 1, nodes = 1, gpus_per_node = 1, chunks = 1,\n"
    "  nics_per_node = 1, recompute_layers = 1, ranks_per_node = 1,\n"
    "  root = 1, buckets = 1, seq = 1, hidden = 1, heads = 1, vocab = 1,\n"
    "  batch = 1, seed = 1, layers = 1, microbatch = 1, kv_heads = 1,\n"
    "  ffn_hidden = 1, head_dim = 1, max_positions = 1, ep = 1, etp = 1,\n"
    "  experts = 1, topk = 1, expert_ffn = 1 }\n"
    "local function tame(t, depth, seen)\n"
    "  if type(t) ~= 'table' or depth > 5 or seen[t] then return end\n"
    "  seen[t] = true\n"
    "  t.db = nil\n"
    "  for k, v in pairs(t) do\n"
    "    if SIZE[k] and type(v) == 'number' and v > 64 and v < 2^31 then\n"
    "      t[k] = 64\n"
    "    elseif SIZE[k] and type(v) == 'table' and #v > 64 then\n"
    "      t[k] = nil\n"
    "    else tame(v, depth + 1, seen) end\n"
    "  end\n"
    "end\n"
    "local function one_line(ok, res, what)\n"
    "  if ok then return end\n"
    "  assert(type(res) == 'string' and res ~= '', what .. ': error is a ' ..\n"
    "         type(res))\n"
    "  assert(not res:find('instruction budget'), what .. ': ' .. res)\n"
    "end\n"
    "local SHOW = os.getenv('PIPESIM_FUZZ_SHOW')\n"
    "-- every device, GB200 NVL72's 72-GPU node too: its nvls all-reduce's\n"
    "-- 10,224 flows start and end at one instant and share one solve of\n"
    "-- the network (core/net/flow.c net_settle), milliseconds\n"
    "local PRESETS, DEVICES = ps.models.presets(), ps.clusters.devices()\n"
    "-- kinds 3..5: a model from a random shape, a preset with random\n"
    "-- overrides, a DGX cluster with random overrides; what is accepted\n"
    "-- is run (2 stages, 2 microbatches) or gets an allreduce\n"
    "local function models(kind, spec, pick)\n"
    "  local ok, res\n"
    "  if kind == 5 then\n"
    "    ok, res = pcall(ps.clusters.dgx, DEVICES[pick % #DEVICES + 1],\n"
    "                    1 + pick % 3, spec)\n"
    "    one_line(ok, res, 'ps.clusters.dgx')\n"
    "    if not ok then return end\n"
    "    ok, res = pcall(ps.cluster, res)\n"
    "    one_line(ok, res, 'ps.cluster')\n"
    "    if not ok then return end\n"
    "    ok, res = pcall(ps.collective, { cluster = res, op = 'allreduce',\n"
    "      bytes = 4096, record = 'none' })\n"
    "    one_line(ok, res, 'ps.collective')\n"
    "    return\n"
    "  end\n"
    /* half of the random shapes' runs split the sequence (cp.lua), which
     * needs fused attention: on unless the input says (not the presets:
     * cp x 2 stages of a 1T model sync ~10^4 buckets, 2 s under ASan) */
    "  local cp = kind == 3 and ({ 1, 1, 2, 4 })[pick // 64 + 1] or 1\n"
    "  local ct = cp > 1 and ({ 'p2p', 'all_gather', 'a2a', 'p2p' })\n"
    "    [pick // 16 % 4 + 1] or nil\n"
    "  if cp > 1 and spec.flash_attention == nil then\n"
    "    spec.flash_attention = true end\n"
    "  if kind == 3 then ok, res = pcall(ps.models.transformer, spec)\n"
    "  else ok, res = pcall(ps.models.preset,\n"
    "                       PRESETS[pick % #PRESETS + 1], spec) end\n"
    "  one_line(ok, res, 'ps.models')\n"
    "  if SHOW then print(kind, ok, ok and #res or res) end\n"
    "  if not ok or type(res) ~= 'table' or #res > 4096 then return end\n"
    "  local c = ps.cluster(ps.clusters.dgx(DEVICES[pick % #DEVICES + 1], 1))\n"
    "  ok, res = pcall(ps.run, { layers = res, stages = math.min(#res, 2),\n"
    "    microbatches = 2, cluster = c, record = 'none', cp = cp,\n"
    "    cp_comm_type = ct })\n"
    "  one_line(ok, res, 'ps.run')\n"
    "end\n"
    "return function(kind, spec, pick)\n"
    "  tame(spec, 0, {})\n"
    "  if kind == 2 and (spec.verify or spec.data) then\n"
    "    local b = spec.bytes\n"
    "    if type(b) == 'string' then\n"
    "      local ok, n = pcall(ps.parse, b, 'bytes'); b = ok and n or 0\n"
    "    end\n"
    "    if type(b) == 'number' and b > 2^24 then spec.bytes = 2^24 end\n"
    "  end\n"
    "  if type(spec.cluster) == 'table' then\n"
    "    local ok, c = pcall(ps.cluster, spec.cluster)\n"
    "    one_line(ok, c, 'ps.cluster')\n"
    "    if ok then spec.cluster = c end\n"
    "  end\n"
    "  if kind >= 3 then return models(kind, spec, pick) end\n"
    "  local fn = ({ ps.run, ps.cluster, ps.collective })[kind + 1]\n"
    "  local ok, res = pcall(fn, spec)\n"
    "  if SHOW then print(kind, ok, ok and (res.makespan or res.time or\n"
    "    tostring(res)) or res) end\n"
    "  one_line(ok, res, ({ 'ps.run', 'ps.cluster', 'ps.collective' })[kind + "
    "1])\n"
    "  if ok and kind == 0 then\n"
    "    assert(type(res.makespan) == 'number' and res.makespan >= 0,\n"
    "           'makespan ' .. tostring(res.makespan))\n"
    "  end\n"
    "end\n";

/* Fields that make a spec reach the engine more often than random ones
 * would: layers, stages, microbatches, a cluster, the op. */
static void shape(lua_State *L, fuzz_in *in, int kind)
{
    unsigned flags = fuzz_byte(in);
    if (kind == 0 && (flags & 1)) {
        int n = 1 + (int)(fuzz_byte(in) % 8);
        lua_createtable(L, n, 0);
        for (int i = 1; i <= n; i++) {
            push_table(L, in, 2);
            if (!(fuzz_byte(in) & 3)) { /* mostly a usable layer */
                lua_pushnumber(L, 1e-3 * (1 + fuzz_byte(in) % 7));
                lua_setfield(L, -2, "fwd_time");
            }
            lua_seti(L, -2, i);
        }
        lua_setfield(L, -2, "layers");
    }
    if (kind == 0 && (flags & 2)) {
        lua_pushinteger(L, 1 + (lua_Integer)(fuzz_byte(in) % 4));
        lua_setfield(L, -2, "stages");
        lua_pushinteger(L, 1 + (lua_Integer)(fuzz_byte(in) % 8));
        lua_setfield(L, -2, "microbatches");
    }
    if (kind != 1 && (flags & 4)) {
        push_table(L, in, 2);
        if (flags & 8) {
            lua_pushinteger(L, 1 + (lua_Integer)(fuzz_byte(in) % 16));
            lua_setfield(L, -2, "ranks");
        }
        lua_setfield(L, -2, "cluster");
    }
    if (kind == 2 && (flags & 16)) {
        static const char *const ops[] = {"allreduce", "reduce_scatter",
                                          "allgather", "broadcast", "reduce"};
        lua_pushstring(L, ops[fuzz_byte(in) % 5]);
        lua_setfield(L, -2, "op");
        lua_pushinteger(L, 4 * (lua_Integer)(fuzz_byte(in) % 64));
        lua_setfield(L, -2, "bytes");
    }
    if (kind != 1 && (flags & 0xe0) != 0xe0) { /* fuzz_db reads records */
        lua_pushliteral(L, "none");
        lua_setfield(L, -2, "record");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_state fs = {.uses = 64};
    fuzz_in in = {data, size};
    lua_State *L = fuzz_state_get(&fs, "scenario.db", driver);
    int kind = (int)(fuzz_byte(&in) % 6);
    lua_pushinteger(L, kind);
    push_table(L, &in, 0);
    if (kind < 3)
        shape(L, &in, kind);
    lua_pushinteger(L, (lua_Integer)fuzz_byte(&in));
    if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
        fprintf(stderr, "scenario: %s\n", lua_tostring(L, -1));
        abort();
    }
    fuzz_state_done(&fs);
    return 0;
}
