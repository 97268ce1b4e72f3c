-- ps.sharding: ZeRO's memory formulas and the frameworks' names for the
-- sharding level (docs/sharding.md). ps.run's own spelling is
-- `zero = 0..3` with `shard_group` and `reshard_after_forward`; the
-- simulation is core/par/dp.c and core/par/fsdp.c.
local check = require "pipesim.argcheck"

local M = {}

-- Bytes per parameter held by one rank of a shard group of n ranks, the
-- ZeRO paper's model-state memory (Rajbhandari et al. 2020, section 5.1
-- and Figure 1): with w weight, g gradient and k optimizer bytes per
-- parameter (2, 2 and K = 12 for mixed-precision Adam):
--   stage 0  w + g + k          (2 + 2 + K) psi
--   stage 1  w + g + k / n      2 psi + 2 psi + K psi / Nd
--   stage 2  w + (g + k) / n    2 psi + (2 + K) psi / Nd
--   stage 3  (w + g + k) / n    (2 + 2 + K) psi / Nd
-- core/par/fsdp.c par_fsdp_per_param is the same in C (the run's static
-- memory adds the implementations' buffers beyond it).
function M.per_param(zero, n, w, g, k)
    w, g, k = w or 2, g or 2, k or 12
    n = (n and n > 1) and n or 1
    if zero == 1 then return w + g + k / n end
    if zero == 2 then return w + (g + k) / n end
    if zero == 3 then return (w + g + k) / n end
    return w + g + k
end

-- The model states of psi parameters per rank (bytes).
function M.model_states(psi, zero, n, w, g, k)
    return psi * M.per_param(zero, n, w, g, k)
end

-- PyTorch FSDP's ShardingStrategy (torch/distributed/fsdp/api.py, PyTorch
-- 2.6) -> zero and whether it is hybrid (sharded within a node-sized
-- group, replicated across).
M.FSDP_STRATEGY = {
    NO_SHARD = { zero = 0 },
    SHARD_GRAD_OP = { zero = 2 },
    FULL_SHARD = { zero = 3 },
    HYBRID_SHARD = { zero = 3, hybrid = true },
    _HYBRID_SHARD_ZERO2 = { zero = 2, hybrid = true },
}

-- Megatron-FSDP's --data-parallel-sharding-strategy (Megatron-LM core
-- 0.20 megatron/training/arguments.py, choices no_shard, optim,
-- optim_grads, optim_grads_params) -> zero.
M.MEGATRON_STRATEGY = { no_shard = 0, optim = 1, optim_grads = 2, optim_grads_params = 3 }

local function names(t)
    local out = {}
    for k in pairs(t) do out[#out + 1] = k end
    table.sort(out)
    return table.concat(out, ", ")
end

-- zero of an FSDP sharding_strategy name, and shard_group: a hybrid
-- strategy shards within `shard_group` ranks (FSDP's default: one node,
-- gpus_per_node), which must be given or known.
function M.fsdp(strategy, shard_group, gpus_per_node, what)
    what = what or "sharding_strategy"
    local s = M.FSDP_STRATEGY[strategy]
    if not s then
        check.fail("%s: unknown FSDP sharding strategy %s (expected %s)", what,
            check.show(strategy), names(M.FSDP_STRATEGY))
    end
    if s.hybrid then
        local k = shard_group or gpus_per_node
        if not k then
            check.fail("%s = %s shards within a node: give shard_group (the GPUs of one node)",
                what, strategy)
        end
        return s.zero, k
    end
    if shard_group then
        check.fail("%s = %s shards over the whole data-parallel group: shard_group applies to " ..
            "HYBRID_SHARD and _HYBRID_SHARD_ZERO2 only", what, strategy)
    end
    return s.zero, nil
end

-- zero of Megatron-FSDP's data_parallel_sharding_strategy.
function M.megatron(strategy)
    local z = M.MEGATRON_STRATEGY[strategy]
    if z == nil then
        check.fail("megatron: data_parallel_sharding_strategy: unknown value %s (expected %s)",
            check.show(strategy), "no_shard, optim, optim_grads, optim_grads_params")
    end
    return z
end

-- DeepSpeed's zero_optimization table (deepspeed/runtime/zero/config.py,
-- DeepSpeed 0.16: stage, reduce_bucket_size and allgather_bucket_size
-- 5e8 elements, stage3_prefetch_bucket_size 5e7, overlap_comm) -> the
-- ps.run fields { zero = , bucket = } and the keys not modelled. Sizes are elements
-- (DeepSpeed's unit), turned into bytes with grad_bytes per element.
-- DeepSpeed refuses stage 2 and 3 with pipeline parallelism
-- (runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are incompatible with
-- pipeline parallelism").
M.DEEPSPEED_KEYS = { stage = true, reduce_bucket_size = true, allgather_bucket_size = true,
    stage3_prefetch_bucket_size = true, overlap_comm = true, contiguous_gradients = true,
    reduce_scatter = true, allgather_partitions = true, stage3_param_persistence_threshold = true,
    stage3_max_live_parameters = true, stage3_max_reuse_distance = true, sub_group_size = true,
    stage3_gather_16bit_weights_on_model_save = true }

-- Keys read: stage, reduce_bucket_size, overlap_comm. The others are
-- accepted, listed as not modelled in one warning line, and returned.
local READ = { stage = true, reduce_bucket_size = true, overlap_comm = true }
local WARNED = {}

local function not_modelled(z)
    local out = {}
    for k in pairs(z) do
        if not READ[k] then out[#out + 1] = k end
    end
    table.sort(out)
    local line = #out > 0 and ("pipesim: warning: ps.sharding.deepspeed: not modelled, " ..
        "ignored: " .. table.concat(out, ", ") .. "\n")
    if line and not WARNED[line] then
        WARNED[line] = true
        io.stderr:write(line)
    end
    return out
end

function M.deepspeed(z, stages, grad_bytes)
    if type(z) ~= "table" then
        check.fail("zero_optimization must be a table such as { stage = 3 }, got %s", check.show(z))
    end
    for k in pairs(z) do
        if not M.DEEPSPEED_KEYS[k] then
            check.fail("zero_optimization: unknown key %s%s", check.show(k),
                check.hint(tostring(k), M.DEEPSPEED_KEYS))
        end
    end
    local stage = z.stage or 0
    if math.type(stage) ~= "integer" or stage < 0 or stage > 3 then
        check.fail("zero_optimization.stage must be 0, 1, 2 or 3, got %s", check.show(stage))
    end
    if stage >= 2 and (stages or 1) > 1 then
        check.fail("zero_optimization.stage = %d with %d pipeline stages: DeepSpeed refuses " ..
            "ZeRO-2 and ZeRO-3 with pipeline parallelism", stage, stages)
    end
    if z.overlap_comm == false and stage >= 2 then
        check.fail("zero_optimization.overlap_comm = false is not modelled with stage %d", stage)
    end
    local out = { zero = stage }
    if z.reduce_bucket_size ~= nil and stage >= 1 then
        local n = check.nonneg(z.reduce_bucket_size, "zero_optimization.reduce_bucket_size")
        if n == 0 then
            check.fail("zero_optimization.reduce_bucket_size must be positive, got %s", check.show(n))
        end
        out.bucket = n * (grad_bytes or 2)
    end
    return out, not_modelled(z)
end

return M
