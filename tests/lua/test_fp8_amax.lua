-- FP8 amax reductions (models/fp8.lua, Transformer Engine v2.9 under
-- Megatron-Core 0.20), charged by the lowering (parallel.lua) against
-- their closed forms with a collective cost given by hand: current
-- scaling's 4-byte TP all-reduces (2 forward, 2 backward a block under
-- sequence parallelism), delayed scaling's one all-reduce forward and one
-- backward per model chunk over the stage's TP x CP x DP ranks, shared by
-- the chunk's blocks. Runs under `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local parallel = require "pipesim.parallel"
local fp8 = require "pipesim.models.fp8"

local dev = ps.clusters.device("H100")

-- a cost that charges `amax` seconds for the all-reduce of `bytes` and
-- logs its calls; every other collective is free
local function costing(bytes, amax, log)
    return function(op, b, ranks)
        if op == "allreduce" and b == bytes then
            if log then log[#log + 1] = { b, table.concat(ranks, ",") } end
            return amax
        end
        return 0
    end
end

local function blocks(recipe, tp, dp, stages, cost, extra)
    local spec = { layers = ps.models.transformer { layers = 4, hidden = 1024, heads = 16,
            seq = 512, vocab = 1024, fp8 = "hybrid", fp8_recipe = recipe },
        tp = tp, dp = dp, stages = stages, sequence_parallel = tp > 1 or nil }
    for k, v in pairs(extra or {}) do spec[k] = v end
    local out = {}
    for _, l in ipairs(parallel.prepare(spec, dev, cost).layers) do
        if l.kind == "block" then out[#out + 1] = l end
    end
    return out
end

-- 1. current scaling, TP 2 with sequence parallelism: + 2 all-reduces of
-- one fp32 amax on the forward and on the input-gradient backward
do
    local with = blocks("tensorwise", 2, 1, 1, costing(4, 1e-3))
    local without = blocks("tensorwise", 2, 1, 1, costing(4, 0))
    H.eq(#with, 4, "four blocks")
    for i = 1, 4 do
        H.near(with[i].fwd_time - without[i].fwd_time, 2e-3, 1e-9, "forward: 2 TP amax reductions")
        H.near(with[i].bwd_input_time - without[i].bwd_input_time, 2e-3, 1e-9,
            "backward: 2 TP amax reductions")
        H.near(with[i].bwd_weight_time, without[i].bwd_weight_time, 1e-12, "not in the wgrad")
    end
    -- none without sequence parallelism, at TP 1, or for the other recipes
    local nosp = blocks("tensorwise", 2, 1, 1, costing(4, 1e-3), { sequence_parallel = false })
    local nosp0 = blocks("tensorwise", 2, 1, 1, costing(4, 0), { sequence_parallel = false })
    H.near(nosp[1].fwd_time, nosp0[1].fwd_time, 1e-12, "no SP: no TP amax reduction")
    for _, recipe in ipairs { "blockwise", "delayed" } do
        local a = blocks(recipe, 2, 1, 1, costing(4, 1e-3))
        local b = blocks(recipe, 2, 1, 1, costing(4, 0))
        H.near(a[1].fwd_time, b[1].fwd_time, 1e-12, recipe .. ": no per-tensor TP reduction")
    end
    H.eq({ fp8.tp_amax_reductions({ fp8 = "hybrid", fp8_recipe = "tensorwise" }, 1, false) },
        { 0, 0 }, "TP 1: none")
end

-- 2. delayed scaling, TP 2 x DP 2, 2 stages: each stage's chunk holds 2
-- blocks, its region reduces 2 x 4 modules x 3 fp32 amaxes forward (96
-- bytes) and x 2 backward (64) over ranks 0-3 (tp-cp-dp of stage 0), one
-- all-reduce each a microbatch, half of it charged to each block
do
    local log = {}
    local fwd = blocks("delayed", 2, 2, 2, costing(96, 1e-3, log))
    local none = blocks("delayed", 2, 2, 2, costing(96, 0))
    H.eq(log[1], { 96, "0,1,2,3" }, "the forward amaxes of a chunk over its TP x DP ranks")
    for i = 1, 4 do
        H.near(fwd[i].fwd_time - none[i].fwd_time, 0.5e-3, 1e-9, "a block's half of the forward's")
        H.near(fwd[i].bwd_input_time, none[i].bwd_input_time, 1e-12, "the backward's is 64 bytes")
    end
    local bwd = blocks("delayed", 2, 2, 2, costing(64, 2e-3))
    local none2 = blocks("delayed", 2, 2, 2, costing(64, 0))
    H.near(bwd[1].bwd_input_time - none2[1].bwd_input_time, 1e-3, 1e-9,
        "a block's half of the backward's")
    -- interleaved: 4 chunks of one block, each its own reduction of 48 bytes
    local v = blocks("delayed", 2, 2, 2, costing(48, 1e-3), { virtual_stages = 2 })
    local v0 = blocks("delayed", 2, 2, 2, costing(48, 0), { virtual_stages = 2 })
    H.near(v[1].fwd_time - v0[1].fwd_time, 1e-3, 1e-9, "one block a chunk: the whole reduction")
    -- one rank in the group: nothing to reduce
    local one = blocks("delayed", 1, 1, 2, costing(96, 1e-3))
    local one0 = blocks("delayed", 1, 1, 2, costing(96, 0))
    H.near(one[1].fwd_time, one0[1].fwd_time, 1e-12, "a group of one: no reduction")
end

H.done()
