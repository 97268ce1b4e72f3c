-- ps.search: plan search over TP x PP x DP x virtual stages x micro-batch
-- size x schedule x recompute x ZeRO (x sequence parallelism). Enumerates
-- the space, removes what Megatron-LM itself would reject, drops what the
-- closed-form memory model says cannot fit, and event-simulates the rest
-- in order of a lower bound on the step time, skipping a configuration
-- only when the bound proves it can neither be the best nor on the Pareto
-- front (step time against peak memory).
local check = require "pipesim.argcheck"
local core = require "pipesim.core"
local models = require "pipesim.models"
local megatron = require "pipesim.models.megatron"
local parallel = require "pipesim.parallel"
local sharding = require "pipesim.sharding"
local transformer = require "pipesim.models.transformer"

local M = {}

local FIELDS = { name = true, model = true, cluster = true, gpus = true, global_batch = true,
                 space = true, objective = true, jobs = true, record = true, db = true,
                 prune = true, tp_in_node = true }
local SPACE = { "tp", "pp", "dp", "virtual_stages", "microbatch", "schedule", "recompute",
                "zero", "sequence_parallel" }
local RECOMPUTE = { none = true, selective = true, full = true }
-- Schedules whose per-rank order (and so whose peak memory) the closed form
-- below reproduces exactly; the others get a lower bound.
local EXACT = { gpipe = true, ["1f1b"] = true, interleaved = true }
-- Schedules that run v > 1 chunks per rank (core/sched/sched.c sched_check), and
-- those whose second chunk sits in V shape (sched_default_placement).
local MULTI_CHUNK = { interleaved = true, looped_bfs = true, interleaved_pytorch = true,
                      interleaved_zb = true, zbv = true, dualpipev = true }
local V_SHAPE = { zbv = true, dualpipev = true }

local GiB = 2 ^ 30
-- configurations simulated between two pruning checks (see M.run)
local BATCH = 8

local function fail(fmt, ...) check.fail("ps.search: " .. fmt, ...) end

local function list_of(space, k, kind)
    local v = space[k]
    if v == nil then return nil end
    if type(v) ~= "table" then v = { v } end
    if #v == 0 then fail("space.%s is an empty list", k) end
    for i = 1, #v do
        local x = v[i]
        local ok
        if kind == "int" then ok = math.type(x) == "integer" and x >= 1
        elseif kind == "zero" then ok = math.type(x) == "integer" and x >= 0 and x <= 3
        elseif kind == "bool" then ok = type(x) == "boolean"
        elseif kind == "recompute" then ok = RECOMPUTE[x]
        else ok = type(x) == "string" end
        if not ok then
            local want = ({ int = "a positive integer", zero = "0, 1, 2 or 3 (ZeRO's stage: " ..
                "1 Megatron's distributed optimizer, 2 and 3 Megatron-FSDP's optim_grads " ..
                "and optim_grads_params; docs/sharding.md)",
                bool = "a boolean", recompute = "'none', 'selective' or 'full'",
                str = "a schedule name" })[kind]
            fail("space.%s[%d] must be %s, got %s", k, i, want, check.show(x))
        end
    end
    return v
end

-- The model's shape: a preset name (ps.models.presets()) or a shape table
-- as ps.models.transformer takes it.
local function model_shape(m)
    local s
    if type(m) == "string" then s = models.shape(m)
    elseif type(m) == "table" then s = transformer.normalize(m)
    else fail("field 'model' must be a preset name or a shape table, got %s", type(m)) end
    -- the flags below describe a dense model: a MoE, MLA or MTP model
    -- would be searched as a dense one (issue 24 adds its dimensions)
    if s.experts or s.multi_latent_attention or s.mtp_layers > 0 then
        fail("field 'model': the plan search does not cover mixture-of-experts, multi-latent " ..
            "attention or multi-token prediction models yet")
    end
    return s
end

-- Megatron-LM flags of one configuration (models/megatron.lua builds the
-- run from them, with Megatron's defaults: memory bytes per parameter,
-- vocab padding, the even layer split, gradient sync in one go).
local function flags(s, c, spec)
    local ends = s.fp8 and s.fp8_bf16_first + s.fp8_bf16_last > 0
    return {
        num_layers = s.layers, hidden_size = s.hidden, ffn_hidden_size = s.ffn_hidden,
        num_attention_heads = s.heads, kv_channels = s.head_dim,
        group_query_attention = s.kv_heads ~= s.heads or nil,
        num_query_groups = s.kv_heads ~= s.heads and s.kv_heads or nil,
        swiglu = s.swiglu, squared_relu = s.squared_relu or nil, seq_length = s.seq,
        max_position_embeddings = s.max_positions,
        vocab_size = s.vocab, fp16 = s.dtype == "fp16", bf16 = s.dtype == "bf16",
        untie_embeddings_and_output_weights = not s.tied,
        position_embedding_type = s.position == "rope" and "rope" or "learned_absolute",
        normalization = s.norm == "rmsnorm" and "RMSNorm" or "LayerNorm",
        disable_bias_linear = not s.bias,
        attention_dropout = s.dropout and 0.1 or 0, hidden_dropout = s.dropout and 0.1 or 0,
        -- Megatron-Core's attention is TE's fused kernel unless unfused
        -- (models/megatron.lua attention)
        attention_backend = s.flash_attention and "auto" or "unfused",
        cross_entropy_loss_fusion = s.ce_fusion and true or nil,
        cross_entropy_fusion_impl = s.ce_fusion or nil,
        fp8_format = s.fp8 or nil, fp8_recipe = s.fp8 and s.fp8_recipe or nil,
        fp8_param_gather = s.fp8 and s.fp8_params or nil,
        no_fp8_wgrad = s.fp8 and not s.fp8_wgrad or nil, fp8_output_proj = s.fp8 and s.fp8_head or nil,
        first_last_layers_bf16 = ends or nil,
        num_layers_at_start_in_bf16 = ends and s.fp8_bf16_first or nil,
        num_layers_at_end_in_bf16 = ends and s.fp8_bf16_last or nil,
        micro_batch_size = c.microbatch, global_batch_size = spec.global_batch,
        world_size = parallel.world(c), tensor_model_parallel_size = c.tp,
        pipeline_model_parallel_size = c.pp,
        num_layers_per_virtual_pipeline_stage = c.v > 1 and s.layers // (c.pp * c.v) or nil,
        sequence_parallel = c.sp, recompute_granularity = c.recompute ~= "none" and c.recompute or nil,
        recompute_method = c.recompute == "full" and "uniform" or nil,
        use_distributed_optimizer = c.zero == 1, schedule = c.schedule,
        -- ZeRO-2/3 as Megatron-FSDP runs them (docs/sharding.md), reducing
        -- during the backward
        use_megatron_fsdp = c.zero >= 2 or nil, overlap_grad_reduce = c.zero >= 2 or nil,
        data_parallel_sharding_strategy = ({ nil, "optim_grads", "optim_grads_params" })[c.zero],
        cluster = spec.cluster, record = spec.record or "summary", db = spec.db,
        -- the model's name (run.model): the preset's, or the shape's own
        name = type(spec.model) == "string" and spec.model or s.name,
    }
end

-- The point a configuration is recorded as (run.point).
function M.point(c)
    return { tp = c.tp, pp = c.pp, dp = c.dp, virtual_stages = c.v, microbatch = c.microbatch,
             schedule = c.schedule, recompute = c.recompute, zero = c.zero,
             sequence_parallel = c.sp }
end

function M.label(c)
    return string.format("tp%d pp%d dp%d v%d mb%d %s %s zero%d%s", c.tp, c.pp, c.dp, c.v,
        c.microbatch, c.schedule, c.recompute, c.zero, c.sp and " sp" or "")
end

---------------------------------------------------------------------------
-- Closed forms from the lowered run (what ps.run hands the core)
---------------------------------------------------------------------------

local function stage_of(sched, p, chunk, r)
    if V_SHAPE[sched] and chunk % 2 == 1 then return (chunk + 1) * p - 1 - r end
    return chunk * p + r
end

-- Per model stage: forward, backward, recompute seconds per microbatch,
-- parameters, and the memory its microbatch holds, mirroring core/step/pipe.c
-- build_stages and stage_recompute: without recompute F allocates the
-- stage's activations and B frees them; with full recompute F keeps the
-- checkpointed inputs (`kept`), R restores the largest unit beyond them
-- (`unit`) and B frees both.
local function stages(args)
    local out, at = {}, 0
    local ck = args.checkpoint == true
    for s, count in ipairs(args.partition) do
        local st = { F = 0, B = 0, R = 0, params = 0, out = 0 }
        local act, kept, any, cur, unit = 0, 0, false, 0, 0
        for i = at + 1, at + count do
            local l = args.layers[i]
            -- plain FLOP layers (no time) count 0: the bound stays a bound
            local f = tonumber(l.fwd_time) or 0
            local b = tonumber(l.bwd_time)
            if not b and l.bwd_input_time and l.bwd_weight_time then
                b = l.bwd_input_time + l.bwd_weight_time
            end
            st.F, st.B = st.F + f, st.B + (b or 2 * f)
            if ck then st.R = st.R + (tonumber(l.recompute_time) or f) end
            st.params = st.params + (tonumber(l.params) or 0)
            -- what the stage sends on (core/step/pipe_cost.c: its last layer's)
            st.out = tonumber(l.out_bytes) or 0
            local a = tonumber(l.act_bytes) or 0
            act = act + a
            local kb = tonumber(l.kept_bytes)
            if kb then any = true else kb = a end
            if kb > 0 then cur = 0 end
            cur = cur + math.max(a - kb, 0)
            unit = math.max(unit, cur)
            kept = kept + kb
        end
        if ck and any then
            st.alloc, st.extra = kept, unit
        else
            st.alloc, st.extra = act, 0
        end
        st.held = st.alloc + st.extra
        out[s] = st
        at = at + count
    end
    return out
end

-- The compute order of pipeline rank r as { kind, chunk } pairs, for the
-- schedules core/sched/sched.c builds Megatron's way (order_gpipe, order_1f1b,
-- order_interleaved with virtual_mb); nil for the others.
local function order(sched, p, v, m, r)
    local o = {}
    local function emit(kind, chunk) o[#o + 1] = kind; o[#o + 1] = chunk end
    if sched == "gpipe" then
        for _ = 1, m do emit("F", 0) end
        for _ = 1, m do emit("B", 0) end
    elseif sched == "1f1b" then
        local warm = math.min(p - r - 1, m)
        for _ = 1, warm do emit("F", 0) end
        for _ = 1, m - warm do emit("F", 0); emit("B", 0) end
        for _ = 1, warm do emit("B", 0) end
    elseif sched == "interleaved" then
        local total, pv = m * v, p * v
        local warm = math.min(2 * (p - r - 1) + (v - 1) * p, total)
        local function chunk(k, fwd)
            local c = (k % pv) // p
            return fwd and c or v - 1 - c
        end
        for k = 0, warm - 1 do emit("F", chunk(k, true)) end
        for k = 0, total - warm - 1 do
            emit("F", chunk(k + warm, true)); emit("B", chunk(k, false))
        end
        for k = total - warm, total - 1 do emit("B", chunk(k, false)) end
    else
        return nil
    end
    return o
end

-- The network's figures for the bound, per cluster and pair of ranks
-- (c:path: route latency, bottleneck bandwidth, first link's bandwidth
-- and id), asked once per pair: a search costs each pair many times.
local PATHS = setmetatable({}, { __mode = "k" })

local function path(cluster, a, b)
    local memo = PATHS[cluster]
    if not memo then memo = { n = cluster.ranks }; PATHS[cluster] = memo end
    local key = a * memo.n + b
    local e = memo[key]
    if not e then
        e = table.pack(cluster:path(a, b))
        memo[key] = e
    end
    return e
end

-- The least time bytes take from cluster rank a to b: the route's latency
-- plus bytes over its bottleneck bandwidth (core/net/net.c net_lone_time), what
-- the transfer takes alone; sharing links and waiting only add to it.
local function lone(cluster, a, b, bytes)
    if not cluster or a == b then return 0 end
    local e = path(cluster, a, b)
    return e[1] + bytes / e[2]
end

-- A lower bound on a collective in which the first rank of group (the
-- cluster ranks of one pipeline rank's d replicas, replica 0's first) must
-- send `bytes`: they leave on the first links of its routes to the others,
-- and the last of them arrives a route latency later at the earliest.
-- What it must send, whatever the algorithm (ring, the trees, direct,
-- NVLS) and protocol (which only add bytes; NVLS's transfers are scaled to
-- carry more, core/coll/proto.c): in an all-reduce its whole gradient,
-- since every other rank needs a sum of each of its elements; in a
-- reduce-scatter its contributions to the other d - 1 shards, (d - 1)/d of
-- it; in an all-gather its own shard, 1/d of the weights, at least once.
local function coll_bound(cluster, group, bytes)
    local d = #group
    if not cluster or d < 2 then return 0 end
    local a = group[1]
    local cap, lat, seen = 0, math.huge, {}
    for j = 2, d do
        local e = path(cluster, a, group[j])
        lat = math.min(lat, e[1])
        local bw, id = e[3], e[4]
        if bw and id == nil then
            cap = cap + bw -- a mesh: every pair has its own link
        elseif bw and not seen[id] then
            seen[id] = true
            cap = cap + bw
        end
    end
    if cap <= 0 then return lat end
    return lat + bytes / cap
end

-- cost(args, c) -> { memory = closed-form peak bytes (the largest rank's),
-- exact = whether it is the simulated peak or only a lower bound, bound =
-- a lower bound on the step time, rank = the rank with the largest peak }.
-- The peak of a rank is its static memory (weights, gradients, optimizer
-- state, ZeRO-1 dividing the last by dp: core/step/pipe.c) plus the largest
-- running sum of its schedule's allocations (F +alloc, R +extra, B -held),
-- which is what the memory ledger (core/sim/mem.c) computes from one compute
-- lane. The bound on the step time holds for any schedule: rank r cannot
-- start before microbatch 0's forward went through stages 0..r-1 and over
-- the r links between them (fill; each transfer at least its time alone on
-- the network), then computes m (F + R + B) per chunk one op at a time
-- (busy). Without overlap (Megatron's default, which ps.search builds) the
-- gradient sync starts after the rank's last op (core/par/dp_lane.c par_dp_rewrite_lane),
-- and the optimizer step waits for it; with ZeRO-1 the sync is a
-- reduce-scatter and an all-gather of the updated weights follows the step
-- (sync = before + opt + after). For the
-- Megatron-order schedules the rank's last op is the backward of stage r,
-- after which stages r-1..0 still run theirs, each after the gradient
-- came down its link (drain; Megatron receives it before the recompute,
-- core/sched/lower.c), and then rank 0 syncs and steps.
function M.cost(args, c)
    local st = stages(args)
    local p, v, m = args.stages, args.virtual_stages or 1, args.microbatches
    local d = args.dp or 1
    local mem = args.memory or {}
    -- ZeRO's stage over the data-parallel group (or its shard group): the
    -- ZeRO paper's bytes per parameter (ps.sharding); ZeRO-2/3's buffers
    -- beyond them (core/par/fsdp.c) are left out, so their memory is a
    -- lower bound, and their sync runs during the backward (not costed)
    local stage = d > 1 and (args.zero or 0) or 0
    local shard = args.shard_group or d
    local zero = stage == 1
    local per_param = sharding.per_param(stage, shard, mem.weight_bytes or 2,
        mem.grad_bytes or 2, mem.optimizer_bytes or 12)
    local opt = (tonumber(args.optimizer_time) or 0) / (stage >= 1 and shard or 1)
    local exact = EXACT[c.schedule] ~= nil and stage < 2
    local cluster = type(args.cluster) == "userdata" and args.cluster or nil
    local at_list = parallel.stage_ranks(args) -- the layout's: TP rank 0 of each group
    local function at(r, j) return at_list[j * p + r + 1] end
    local gs = args.grad_sync
    local overlap = not (type(gs) == "table" and gs.overlap == false)
    local grad_bytes, weight_bytes = mem.grad_bytes or 2, mem.weight_bytes or 2
    local best_mem, best_rank, bound = 0, 0, 0
    local fill, drain = 0, 0
    local peaks, sync = {}, {}
    for r = 0, p - 1 do
        local static, busy, params = 0, 0, 0
        for ch = 0, v - 1 do
            local g = st[stage_of(c.schedule, p, ch, r) + 1]
            static = static + g.params * per_param
            params = params + g.params
            busy = busy + m * (g.F + g.R + g.B)
        end
        sync[r] = opt
        if d > 1 and not overlap then
            local group = {}
            for j = 0, d - 1 do group[j + 1] = at(r, j) end
            if zero then
                sync[r] = coll_bound(cluster, group, (d - 1) / d * params * grad_bytes) + opt
                    + coll_bound(cluster, group, params * weight_bytes / d)
            else
                sync[r] = coll_bound(cluster, group, params * grad_bytes) + opt
            end
        end
        local peak
        local o = order(c.schedule, p, v, m, r)
        if o then
            local cur, top = 0, 0
            for i = 1, #o, 2 do
                local g = st[stage_of(c.schedule, p, o[i + 1], r) + 1]
                if o[i] == "F" then
                    cur = cur + g.alloc
                    top = math.max(top, cur)
                else
                    -- R restores `extra` right before B, which frees
                    -- it and the forward's allocation
                    top = math.max(top, cur + g.extra)
                    cur = cur - g.alloc
                end
            end
            peak = static + top
        else
            local top = 0
            for ch = 0, v - 1 do top = math.max(top, st[stage_of(c.schedule, p, ch, r) + 1].held) end
            peak = static + top
        end
        peaks[r + 1] = peak
        if peak > best_mem then best_mem, best_rank = peak, r end
        local tail = sync[r]
        if EXACT[c.schedule] then tail = math.max(tail, drain + sync[0]) end
        bound = math.max(bound, fill + busy + tail)
        if r < p - 1 then
            local g = st[r + 1]
            -- microbatch 0's activations up to rank r + 1, the last
            -- microbatch's gradient down from it
            fill = fill + g.F + lone(cluster, at(r, 0), at(r + 1, 0), g.out)
            drain = drain + g.R + g.B + lone(cluster, at(r + 1, 0), at(r, 0), g.out)
        end
    end
    return { memory = best_mem, exact = exact, bound = bound, rank = best_rank, peaks = peaks }
end

---------------------------------------------------------------------------
-- Enumeration and the constraints, in the order they are applied
---------------------------------------------------------------------------

-- Each constraint: name, what it says when it removes a candidate, and a
-- test returning true when the candidate passes. Sources: Megatron-LM
-- megatron/training/arguments.py (tp divides heads and query groups; layers
-- divisible by pp and by the virtual-stage split), megatron/core/
-- parallel_state.py ("pipeline-model-parallel size should be greater than 1
-- with interleaved schedule"), num_microbatches_calculator.py (global batch
-- divisible by micro batch x dp), schedules.py (interleaving needs m a
-- multiple of pp with the default microbatch_group_size_per_vp_stage;
-- core/sched/sched.c sched_check), tensor_parallel layers (hidden and ffn split
-- evenly).
local function constraints(shape, spec, nodesize)
    local L, B = shape.layers, spec.global_batch
    local seen = {}
    local list = {
        { "gpus", "tp x pp x dp is not the number of GPUs",
            function(c) return parallel.world(c) == spec.gpus end },
        { "tp_divides", "tp does not divide the heads, query groups, hidden or ffn size",
            function(c)
                return shape.heads % c.tp == 0 and shape.kv_heads % c.tp == 0
                  and shape.hidden % c.tp == 0 and shape.ffn_hidden % c.tp == 0
            end },
        { "tp_in_node", string.format("the TP group does not fit in a node of %d GPUs",
            nodesize or 0),
            function(c)
                return spec.tp_in_node == false or not nodesize or nodesize % c.tp == 0
            end },
        { "pp_layers", string.format("pp does not divide the %d layers", L),
            function(c) return L % c.pp == 0 end },
        { "virtual_stages", "virtual stages need a multi-chunk schedule, pp > 1 and a " ..
            "stage's layers divisible by v (and v > 1 for interleaved)",
            function(c)
                if c.v == 1 then return c.schedule ~= "interleaved" and not V_SHAPE[c.schedule] end
                return MULTI_CHUNK[c.schedule] ~= nil and c.pp > 1 and (L // c.pp) % c.v == 0
                  and (not V_SHAPE[c.schedule] or c.v == 2)
            end },
        { "global_batch", string.format("dp x microbatch does not divide the global batch %d", B),
            function(c) return B % (c.dp * c.microbatch) == 0 end },
        { "schedule", "interleaved needs the microbatch count to be a multiple of pp",
            function(c)
                local m = B // (c.dp * c.microbatch)
                return c.schedule ~= "interleaved" or m % c.pp == 0
            end },
        { "duplicate", "sequence parallelism at tp 1 and ZeRO at dp 1 change nothing: " ..
            "the same configuration is already in the list",
            function(c)
                local key = M.label { tp = c.tp, pp = c.pp, dp = c.dp, v = c.v,
                    microbatch = c.microbatch, schedule = c.schedule, recompute = c.recompute,
                    zero = c.dp > 1 and c.zero or 0, sp = c.sp }
                if seen[key] then return false end
                seen[key] = true
                return true
            end },
    }
    return list
end

local function enumerate(space, spec)
    local tps = space.tp or { 1 }
    local pps = space.pp or { 1 }
    local vs = space.virtual_stages or { 1 }
    local mbs = space.microbatch or { 1 }
    local scheds = space.schedule or { "1f1b" }
    local rcs = space.recompute or { "none" }
    local zeros = space.zero or { 0 }
    local sps = space.sequence_parallel or { true }
    local out = {}
    for _, tp in ipairs(tps) do
        for _, pp in ipairs(pps) do
            local dps = space.dp
            if not dps then
                -- dp follows from the GPU count (a non-integer one fails 'gpus')
                dps = { spec.gpus % (tp * pp) == 0 and spec.gpus // (tp * pp) or 0 }
            end
            for _, dp in ipairs(dps) do
                for _, v in ipairs(vs) do
                    for _, mb in ipairs(mbs) do
                        for _, sc in ipairs(scheds) do
                            for _, rc in ipairs(rcs) do
                                for _, z in ipairs(zeros) do
                                    for _, sp in ipairs(sps) do
                                        out[#out + 1] = {
                                            tp = tp, pp = pp, dp = dp, v = v, microbatch = mb,
                                            schedule = sc, recompute = rc, zero = z,
                                            sp = sp and tp > 1,
                                            index = #out + 1,
                                        }
                                    end
                                end
                            end
                        end
                    end
                end
            end
        end
    end
    return out
end

---------------------------------------------------------------------------
-- The search
---------------------------------------------------------------------------

local function check_spec(ps, spec)
    if type(spec) ~= "table" then fail("expected a table of fields, got %s", type(spec)) end
    check.known_fields(spec, FIELDS, "ps.search")
    if spec.model == nil then fail("missing field 'model'") end
    if type(spec.cluster) ~= "userdata" then
        fail("field 'cluster' must be a cluster (ps.cluster), got %s", type(spec.cluster))
    end
    spec.gpus = check.posint(spec.gpus, "ps.search: field 'gpus'")
    if spec.gpus > spec.cluster.ranks then
        fail("field 'gpus' (%d) is more than the cluster's %d ranks", spec.gpus, spec.cluster.ranks)
    end
    spec.global_batch = check.posint(spec.global_batch, "ps.search: field 'global_batch'")
    local obj = spec.objective or "step_time"
    if obj ~= "step_time" then
        fail("field 'objective': unknown objective %s (expected 'step_time')", check.show(obj))
    end
    if spec.jobs ~= nil then check.posint(spec.jobs, "ps.search: field 'jobs'") end
    local prune = spec.prune or "bound"
    if prune ~= "bound" and prune ~= "none" then
        fail("field 'prune' must be 'bound' or 'none', got %s", check.show(prune))
    end
    if spec.name ~= nil and type(spec.name) ~= "string" then
        fail("field 'name' must be a string, got %s", check.show(spec.name))
    end
    local space = spec.space
    if type(space) ~= "table" then fail("field 'space' must be a table, got %s", type(space)) end
    check.known_fields(space, SPACE, "ps.search: space")
    if next(space) == nil then
        fail("empty space: give at least one of %s", table.concat(SPACE, ", "))
    end
    local sp = {}
    for _, k in ipairs { "tp", "pp", "dp", "virtual_stages", "microbatch" } do
        sp[k] = list_of(space, k, "int")
    end
    sp.schedule = list_of(space, "schedule", "str")
    sp.recompute = list_of(space, "recompute", "recompute")
    sp.zero = list_of(space, "zero", "zero")
    sp.sequence_parallel = list_of(space, "sequence_parallel", "bool")
    local ok, shape = pcall(model_shape, spec.model)
    if not ok then fail("field 'model': %s", shape) end
    local _ = ps
    return sp, shape, prune
end

local function ranked(a, b)
    if a.step_time ~= b.step_time then return a.step_time < b.step_time end
    return a.index < b.index
end

-- Pareto front of step time against peak memory over the simulated rows
-- that fit: sorted by memory, each row faster than every row before it.
local function front(rows)
    local fit = {}
    for _, r in ipairs(rows) do
        if r.step_time and r.fits then fit[#fit + 1] = r end
    end
    table.sort(fit, function(a, b)
        if a.peak_memory ~= b.peak_memory then return a.peak_memory < b.peak_memory end
        return ranked(a, b)
    end)
    local out, fastest = {}, math.huge
    for _, r in ipairs(fit) do
        if r.step_time < fastest then out[#out + 1] = r; fastest = r.step_time end
    end
    return out
end

function M.run(ps, spec, hooks)
    local ok, space, shape, prune = pcall(check_spec, ps, spec)
    if not ok then error(space, hooks.level + 1) end
    -- a search is a sweep for --shard's check (core/cli/main.c): see shards below
    core.sweep_begin()
    local name = spec.name or "search"
    local cluster = spec.cluster
    local nodesize = cluster.gpus_per_node
    if not (math.type(nodesize) == "integer" and nodesize > 0) then nodesize = nil end
    local capacity = cluster.memory
    local cands = enumerate(space, spec)
    local result = { name = name, raw = #cands, dropped = {}, table = {} }
    local order_of_drops = {}
    -- the constraints, one after the other; the one that empties the
    -- candidate list is named in the error
    for _, cons in ipairs(constraints(shape, spec, nodesize)) do
        local kept, removed, first = {}, 0, nil
        for _, c in ipairs(cands) do
            if cons[3](c) then kept[#kept + 1] = c
            else removed = removed + 1; first = first or c end
        end
        if removed > 0 then
            result.dropped[cons[1]] = removed
            order_of_drops[#order_of_drops + 1] = cons[1]
        end
        if #kept == 0 then
            error(string.format("ps.search: no valid configuration: constraint '%s' removed the " ..
                "last %d candidates (%s; e.g. %s)", cons[1], removed, cons[2], M.label(first)),
                hooks.level + 1)
        end
        cands = kept
    end
    -- cost every valid configuration without simulating it
    local layers_of = {} -- one layer list per (micro-batch, tp): lowered once
    local fits = {}
    local mem_removed, smallest = 0, nil
    for _, c in ipairs(cands) do
        c.microbatches = spec.global_batch // (c.dp * c.microbatch)
        local run = megatron.build(flags(shape, c, spec))
        local key = c.microbatch .. "|" .. c.tp
        if layers_of[key] then run.layers = layers_of[key] else layers_of[key] = run.layers end
        run.name = name .. "/" .. M.label(c)
        c.run = run
        local pok, args = pcall(hooks.prepare, run)
        if not pok then
            result.dropped["ps.run"] = (result.dropped["ps.run"] or 0) + 1
            c.error = args
        else
            local k = M.cost(args, c)
            c.memory, c.memory_exact, c.bound, c.peaks = k.memory, k.exact, k.bound, k.peaks
            if capacity and capacity > 0 and c.memory > capacity then
                mem_removed = mem_removed + 1
                if not smallest or c.memory < smallest.memory then smallest = c end
            else
                fits[#fits + 1] = c
            end
        end
    end
    if mem_removed > 0 then
        result.dropped.memory = mem_removed
        order_of_drops[#order_of_drops + 1] = "memory"
    end
    if #fits == 0 then
        if smallest then
            error(string.format("ps.search: no valid configuration: constraint 'memory' removed " ..
                "the last %d candidates (the smallest, %s, needs %.1f GiB of the device's %.1f GiB)",
                mem_removed, M.label(smallest), smallest.memory / GiB, capacity / GiB),
                hooks.level + 1)
        end
        error(string.format("ps.search: no valid configuration: ps.run rejected the last %d " ..
            "candidates (%s)", result.dropped["ps.run"] or 0, tostring(cands[1].error)),
            hooks.level + 1)
    end
    result.valid = #fits
    result.drop_order = order_of_drops
    -- simulate in order of the bound; skip a configuration when a
    -- simulated one is at least as fast as its bound and needs no more
    -- memory than its closed form: it can then be neither the best nor on
    -- the front
    table.sort(fits, function(a, b)
        if a.bound ~= b.bound then return a.bound < b.bound end
        return a.index < b.index
    end)
    local done = {}
    local simulated, pruned = 0, 0
    local jobs, shard_k, shard_n = core.sweep_info()
    -- --shard K/N: with prune = "none" every valid configuration is a point
    -- of its own, so the shards divide them, the k-th by enumeration order
    -- going to shard k % N, and each records its own (merging the shards
    -- gives the rows of the unsharded search); its result covers its own
    -- rows. With prune = "bound" what is simulated depends on the results
    -- before it, so the search cannot be divided: every shard runs it whole
    -- and shard 0 alone records it.
    local divided = shard_n > 1 and prune == "none"
    if divided then
        local by_index = table.move(fits, 1, #fits, 1, {})
        table.sort(by_index, function(a, b) return a.index < b.index end)
        for k, c in ipairs(by_index) do c.shard = (k - 1) % shard_n end
        result.shard = { k = shard_k, n = shard_n }
    end
    if spec.jobs and spec.jobs < jobs then jobs = spec.jobs end
    -- configurations in batches of BATCH, in bound order, a batch at a
    -- time in --jobs worker processes (ps.sweep's core.sweep_map): pruning
    -- is checked against the batches before, so a batch may simulate one
    -- that a one-by-one search would have skipped, never the reverse. The
    -- batch does not depend on --jobs, so neither do the rows recorded.
    local batch = BATCH
    local function dominated(c)
        if prune ~= "bound" then return false end
        for _, d in ipairs(done) do
            if d.fits and d.step_time <= c.bound and d.peak_memory <= c.memory then return true end
        end
        return false
    end
    -- one configuration: recorded as a point of the sweep named after the
    -- search (run.sweep, run.point as JSON, run.point_index = its place in
    -- the enumeration from 0); under --shard K/N undivided, only shard 0
    -- records, the others search alike without recording (init.lua's rule
    -- for runs outside a sweep)
    local function simulate(c)
        if shard_k == 0 or divided then
            hooks.at { sweep = name, point = table.concat(hooks.json(M.point(c), {})),
                       point_index = c.index - 1 }
        end
        local rok, r = pcall(ps.run, c.run)
        hooks.at(nil)
        if not rok then return { failed = tostring(r) } end
        local peak = 0
        for _, x in ipairs(r.peak_memory) do peak = math.max(peak, x) end
        return { makespan = r.makespan, peak = peak, id = r.id, fits = r.fits ~= false,
                 bubble = r.bubble, peak_memory = r.peak_memory }
    end
    local i = 1
    while i <= #fits do
        local todo = {}
        while i <= #fits and #todo < batch do
            local c = fits[i]
            i = i + 1
            c.row = { index = c.index, tp = c.tp, pp = c.pp, dp = c.dp, virtual_stages = c.v,
                      microbatch = c.microbatch, microbatches = c.microbatches,
                      schedule = c.schedule, recompute = c.recompute, zero = c.zero,
                      sequence_parallel = c.sp, bound = c.bound, memory = c.memory,
                      memory_exact = c.memory_exact, peaks = c.peaks, label = M.label(c) }
            result.table[#result.table + 1] = c.row
            if divided and c.shard ~= shard_k then
                c.row.status = "other shard"
            elseif dominated(c) then
                pruned = pruned + 1
                c.row.status = "pruned"
            else
                todo[#todo + 1] = c
            end
        end
        local outs
        if #todo > 1 and jobs > 1 and core.sweep_map then
            outs = core.sweep_map(#todo, jobs, function(j) return simulate(todo[j]) end)
        else
            outs = {}
            for j, c in ipairs(todo) do outs[j] = simulate(c) end
        end
        for j, c in ipairs(todo) do
            local o, row = outs[j], c.row
            simulated = simulated + 1
            if o.failed then
                -- a rule of the schedule's own (core/sched/sched.c sched_check)
                -- that the constraints above do not repeat
                row.status, row.error = "failed", o.failed
                result.dropped["ps.run"] = (result.dropped["ps.run"] or 0) + 1
            else
                row.status = "simulated"
                row.step_time, row.peak_memory, row.run = o.makespan, o.peak, o.id
                row.rank_peaks, row.fits, row.bubble = o.peak_memory, o.fits, o.bubble
                done[#done + 1] = row
            end
        end
    end
    table.sort(result.table, function(a, b) return a.index < b.index end)
    result.simulated, result.pruned = simulated, pruned
    local best
    for _, r in ipairs(done) do
        if r.fits and (not best or ranked(r, best)) then best = r end
    end
    result.best = best
    result.pareto = front(done)
    return result
end

return M
