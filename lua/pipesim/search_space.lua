-- ps.search's space: the fields, their checks, the enumeration of every
-- configuration and the constraints Megatron-LM applies (lua/pipesim/search.lua
-- runs them in order).
local check = require "pipesim.argcheck"
local parallel = require "pipesim.parallel"
local cost = require "pipesim.search_cost"
local fp8 = require "pipesim.models.fp8"

local M = {}

local MULTI_CHUNK, V_SHAPE = cost.MULTI_CHUNK, cost.V_SHAPE
-- the fields in enumeration order (a field given one value leaves the
-- others' order, and so run.point_index, as without it)
local SPACE = { "tp", "cp", "cp_comm_type", "pp", "dp", "ep", "etp", "virtual_stages",
                "microbatch", "schedule", "recompute", "zero", "sequence_parallel", "fp8" }
M.SPACE = SPACE
local RECOMPUTE = { none = true, selective = true, full = true }
-- cp_comm_type's values the search varies: a2a+p2p needs a hierarchy
-- (cp_hierarchy), which is a layout of its own, not a point of the space
local CP_COMM = { p2p = true, a2a = true, all_gather = true }
-- every schedule ps.run builds a training step with (core/sched/names.c),
-- in its order; 'custom' needs an order of its own and 'forward_only'
-- trains nothing, so neither is a point of a search
local SCHEDULES = { "gpipe", "1f1b", "interleaved", "zb_h1", "zb_h2", "looped_bfs",
                    "interleaved_pytorch", "interleaved_zb", "zbv", "dualpipev", "dualpipe" }
M.SCHEDULES = SCHEDULES
-- the schedules that split the backward into B and W (core/sched/sched.c
-- sched_splits), with which ps.run does not model ZeRO-2/3
local SPLIT = { zb_h1 = true, zb_h2 = true, interleaved_zb = true, zbv = true, dualpipev = true,
                dualpipe = true }
local SCHEDULE = {}
for _, k in ipairs(SCHEDULES) do SCHEDULE[k] = true end

local function fail(fmt, ...) check.fail("ps.search: " .. fmt, ...) end

local WANT = {
    int = "a positive integer",
    zero = "0, 1, 2 or 3 (ZeRO's stage: 1 Megatron's distributed optimizer, 2 and 3 " ..
        "Megatron-FSDP's optim_grads and optim_grads_params; docs/sharding.md)",
    bool = "a boolean", recompute = "'none', 'selective' or 'full'",
    schedule = "one of " .. table.concat(SCHEDULES, ", "),
    cp_comm = "'p2p', 'a2a' or 'all_gather' (Megatron's --cp-comm-type; 'a2a+p2p' needs " ..
        "a cp_hierarchy, which ps.search does not vary)",
    fp8 = "'bf16' or an FP8 recipe with the hybrid format: 'delayed', 'tensorwise', " ..
        "'blockwise' or 'mxfp8' (Megatron's --fp8-recipe; docs/devices.md)",
}

local function valid(kind, x)
    if kind == "int" then return math.type(x) == "integer" and x >= 1 end
    if kind == "zero" then return math.type(x) == "integer" and x >= 0 and x <= 3 end
    if kind == "bool" then return type(x) == "boolean" end
    if kind == "recompute" then return RECOMPUTE[x] end
    if kind == "cp_comm" then return CP_COMM[x] end
    if kind == "fp8" then return x == "bf16" or fp8.RECIPES[x] ~= nil end
    return kind == "schedule" and SCHEDULE[x] ~= nil
end

function M.list_of(space, k, kind)
    local v = space[k]
    if v == nil then return nil end
    if type(v) ~= "table" then v = { v } end
    if #v == 0 then fail("space.%s is an empty list", k) end
    for i = 1, #v do
        if not valid(kind, v[i]) then
            fail("space.%s[%d] must be %s, got %s", k, i, WANT[kind], check.show(v[i]))
        end
    end
    return v
end

-- The space's lists, checked (nil where a field is left out).
function M.check(space)
    local sp = {}
    for _, k in ipairs { "tp", "cp", "pp", "dp", "ep", "etp", "virtual_stages", "microbatch" } do
        sp[k] = M.list_of(space, k, "int")
    end
    sp.cp_comm_type = M.list_of(space, "cp_comm_type", "cp_comm")
    sp.schedule = M.list_of(space, "schedule", "schedule")
    sp.recompute = M.list_of(space, "recompute", "recompute")
    sp.zero = M.list_of(space, "zero", "zero")
    sp.sequence_parallel = M.list_of(space, "sequence_parallel", "bool")
    sp.fp8 = M.list_of(space, "fp8", "fp8")
    return sp
end

-- The point a configuration is recorded as (run.point): the fields a
-- search without cp and fp8 records, and cp, cp_comm_type and fp8 where set.
function M.point(c)
    return { tp = c.tp, pp = c.pp, dp = c.dp, virtual_stages = c.v, microbatch = c.microbatch,
             schedule = c.schedule, recompute = c.recompute, zero = c.zero,
             sequence_parallel = c.sp, cp = c.cp > 1 and c.cp or nil,
             cp_comm_type = c.cp > 1 and c.cp_comm or nil, fp8 = c.fp8,
             ep = (c.ep or 1) > 1 and c.ep or nil, etp = c.etp and c.etp ~= c.tp and c.etp or nil }
end

-- The expert side's sizes: etp (nil: tp, as Megatron's
-- expert_tensor_parallel_size None) and the expert data-parallel size.
function M.expert_sizes(c)
    local etp, ep = c.etp or c.tp, c.ep or 1
    return etp, ep, parallel.world(c) // (etp * ep * c.pp)
end

function M.label(c)
    local cp = c.cp > 1 and string.format(" cp%d-%s", c.cp, c.cp_comm) or ""
    local ep = (c.ep or 1) > 1 and string.format(" ep%d", c.ep) or ""
    if c.etp and c.etp ~= c.tp then ep = ep .. string.format(" etp%d", c.etp) end
    local f8 = c.fp8 and c.fp8 ~= "bf16" and " fp8-" .. c.fp8 or ""
    return string.format("tp%d%s pp%d dp%d%s v%d mb%d %s %s zero%d%s%s", c.tp, cp, c.pp, c.dp, ep,
        c.v, c.microbatch, c.schedule, c.recompute, c.zero, c.sp and " sp" or "", f8)
end

-- How L layers split over pp stages: 0 when pp divides them (Megatron's
-- even split), 2 when pp divides L + 2 with the embedding and the loss
-- each counted as a layer (Megatron's account_for_embedding_in_pipeline_
-- split and account_for_loss_in_pipeline_split: the first and the last
-- stage hold one block fewer, as Llama 3 405B's 126 layers over 16 stages,
-- Dubey et al. 2024 section 3.3.2), nil when neither.
function M.split(L, pp)
    if L % pp == 0 then return 0 end
    if (L + 2) % pp == 0 then return 2 end
    return nil
end

-- Whether a schedule runs pp pipeline ranks with m microbatches, as
-- core/sched/check.c check_placement and check_rounds refuse them (with
-- their sources: Megatron-LM's schedules.py for interleaved, PyTorch's
-- number_of_rounds for its interleaved orders, DeepSeek's DualPipe.step
-- asserts, PyTorch's ScheduleDualPipeV).
function M.schedule_ok(sched, pp, m)
    if sched == "interleaved" then return m % pp == 0 end
    if sched == "interleaved_pytorch" or sched == "interleaved_zb" then
        return m % math.max(1, m // pp) == 0
    end
    if sched == "dualpipe" then return pp % 2 == 0 and m % 2 == 0 and m >= 2 * pp end
    if sched == "dualpipev" then return m >= 2 * pp end
    return true
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
-- evenly); context parallelism as ps.run checks it (lua/pipesim/cp.lua
-- check_shape: Megatron-Core's get_batch_on_this_cp_rank splits the
-- sequence into 2 cp chunks, Transformer Engine runs CP in its fused
-- attention only and its a2a needs the heads divisible by tp x cp).
function M.constraints(shape, spec, nodesize)
    local L, B = shape.layers, spec.global_batch
    local seen = {}
    local list = {
        { "gpus", "tp x cp x pp x dp is not the number of GPUs",
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
        { "cp_seq", string.format("cp needs fused attention, the sequence (%d) divisible by " ..
            "2 x cp and, with sequence parallelism, seq / cp divisible by tp", shape.seq),
            function(c)
                if c.cp == 1 then return true end
                return shape.flash_attention and shape.seq % (2 * c.cp) == 0
                  and (not c.sp or (shape.seq // c.cp) % c.tp == 0)
            end },
        { "cp_heads", "cp_comm_type a2a needs the heads and query groups divisible by tp x cp",
            function(c)
                if c.cp == 1 or c.cp_comm ~= "a2a" then return true end
                local ha = c.tp * c.cp
                return shape.heads % ha == 0 and shape.kv_heads % ha == 0
            end },
        -- mixture of experts (Megatron-LM megatron/training/arguments.py
        -- validate_args: num_experts % expert_model_parallel_size == 0, and
        -- "When using MoE with tensor parallelism, sequence parallelism must
        -- be used"; megatron/core/parallel_state.py initialize_model_parallel:
        -- the expert RankGenerator's etp x ep x pp
        -- (expert_tensor_model_pipeline_parallel_size) must divide the world,
        -- the rest is the expert data-parallel size; core/par/layout.c
        -- checks the same)
        { "ep_experts", string.format("ep does not divide the %d experts", shape.experts or 0),
            function(c) return (c.ep or 1) == 1 or (shape.experts or 0) % c.ep == 0 end },
        { "expert_world", "etp x ep x pp does not divide the world (Megatron's expert " ..
            "RankGenerator: expert_tensor_model_pipeline_parallel_size)",
            function(c)
                local etp, ep = M.expert_sizes(c)
                return parallel.world(c) % (etp * ep * c.pp) == 0
            end },
        { "etp_divides", "etp does not divide the experts' (and shared experts') ffn size",
            function(c)
                local etp = c.etp or c.tp
                return not shape.experts or (shape.expert_ffn % etp == 0
                    and (shape.shared_ffn or 0) % etp == 0)
            end },
        { "moe_sp", "a MoE model under tensor parallelism needs sequence parallelism " ..
            "(Megatron's arguments.py)",
            function(c) return not shape.experts or c.tp == 1 or c.sp end },
        { "pp_layers", string.format("pp divides neither the %d layers nor the %d with the " ..
            "embedding and the loss counted as layers", L, L + 2),
            function(c) return M.split(L, c.pp) ~= nil end },
        { "virtual_stages", "virtual stages need a multi-chunk schedule, pp > 1 and a " ..
            "stage's layers divisible by v (and v > 1 for interleaved)",
            function(c)
                if c.v == 1 then return c.schedule ~= "interleaved" and not V_SHAPE[c.schedule] end
                return MULTI_CHUNK[c.schedule] ~= nil and c.pp > 1
                  and ((L + M.split(L, c.pp)) // c.pp) % c.v == 0
                  and (not V_SHAPE[c.schedule] or c.v == 2)
            end },
        { "global_batch", string.format("dp x microbatch does not divide the global batch %d", B),
            function(c) return B % (c.dp * c.microbatch) == 0 end },
        { "schedule", "the schedule's own rules on pp and the microbatch count m " ..
            "(interleaved: m a multiple of pp; interleaved_pytorch and interleaved_zb: " ..
            "m a multiple of max(1, m // pp); dualpipe: pp and m even, m >= 2 pp; " ..
            "dualpipev: m >= 2 pp)",
            function(c) return M.schedule_ok(c.schedule, c.pp, B // (c.dp * c.microbatch)) end },
        { "zero_schedule", "ZeRO-2/3 are not modelled with a split backward (the " ..
            "zero-bubble schedules, dualpipe, dualpipev): ps.run refuses them (core/par/dp.c)",
            function(c) return c.zero < 2 or c.dp * c.cp == 1 or not SPLIT[c.schedule] end },
        { "duplicate", "sequence parallelism at tp 1, ZeRO at dp x cp = 1, cp_comm_type " ..
            "at cp 1 and etp = tp (its default) change nothing: the same configuration is " ..
            "already in the list",
            function(c)
                local key = M.label { tp = c.tp, cp = c.cp, cp_comm = c.cp_comm, pp = c.pp,
                    dp = c.dp, ep = c.ep, etp = c.etp, v = c.v, microbatch = c.microbatch, schedule = c.schedule,
                    recompute = c.recompute,
                    zero = (c.dp * c.cp > 1 or select(3, M.expert_sizes(c)) > 1) and c.zero or 0, sp = c.sp,
                    fp8 = c.fp8 }
                if seen[key] then return false end
                seen[key] = true
                return true
            end },
    }
    return list
end

-- Every configuration of the space, in the order of SPACE (the last field
-- varying fastest), numbered by `index` from 1; dp left out follows from
-- gpus / (tp x cp x pp) (a non-integer one fails 'gpus').
function M.enumerate(space, spec)
    local dims = {
        { "tp", space.tp or { 1 } }, { "cp", space.cp or { 1 } },
        { "cp_comm", space.cp_comm_type or { "p2p" } }, { "pp", space.pp or { 1 } },
        { "dp", space.dp or function(c)
            local n = c.tp * c.cp * c.pp
            return { spec.gpus % n == 0 and spec.gpus // n or 0 }
        end },
        { "ep", space.ep or { 1 } }, { "etp", space.etp or { false } },
        { "v", space.virtual_stages or { 1 } }, { "microbatch", space.microbatch or { 1 } },
        { "schedule", space.schedule or { "1f1b" } }, { "recompute", space.recompute or { "none" } },
        { "zero", space.zero or { 0 } }, { "sp", space.sequence_parallel or { true } },
        { "fp8", space.fp8 or { false } },
    }
    local out, c = {}, {}
    local function walk(i)
        if i > #dims then
            local x = {}
            for k, v in pairs(c) do x[k] = v end
            x.sp = x.sp and x.tp > 1
            x.fp8 = x.fp8 or nil
            x.etp = x.etp or nil
            x.index = #out + 1
            out[#out + 1] = x
            return
        end
        local key, vals = dims[i][1], dims[i][2]
        if type(vals) == "function" then vals = vals(c) end
        for _, val in ipairs(vals) do
            c[key] = val
            walk(i + 1)
        end
    end
    walk(1)
    return out
end

return M
