-- Presets through ps.run on a preset cluster: the stages hold every
-- parameter exactly once (static memory = parameters x 16 B, the default
-- 2 + 2 + 12 bytes per parameter), per rank as the partition says, and a
-- FLOP-balanced partition is never less balanced than a parameter-balanced
-- one. Runs under `pipesim run` (needs the core).
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local BYTES_PER_PARAM = 2 + 2 + 12

-- ps.cluster does not take a dgx table as is (it has a name and node
-- fields); a node's device and its NVLink make a single-node cluster.
-- The device without its roofline constants: these checks are about the
-- plain `flops / (peak x efficiency)` rule (test_roofline.lua has the
-- roofline's).
local node = ps.clusters.dgx("H100", 1)
local plain = { flops = node.device.flops, efficiency = node.device.efficiency,
                memory = node.device.memory }
local cluster = ps.cluster{ ranks = 8, device = plain, link = node.intra }

local sum = F.sum

for _, case in ipairs {
    { "toy", 2 }, { "llama2-7b", 4 }, { "llama3-8b", 4 }, { "llama3-70b", 8 },
    { "gpt3-175b", 8 },
} do
    local name, p = case[1], case[2]
    local layers = ps.models.preset(name, { seq = 2048 })
    local total = ps.models.total(layers)
    local imb = {}
    for _, how in ipairs { "uniform", "params", "flops", "time" } do
        local r = ps.run{ name = name .. "/" .. how, cluster = cluster, layers = layers,
            stages = p, microbatches = 8, partition = how, record = "summary" }
        local label = name .. " " .. how
        -- params_stored counts a tied head's copy of the embedding on the
        -- last stage, which that stage really holds (as in Megatron-LM)
        H.near(sum(r.static_memory) / BYTES_PER_PARAM, total.params_stored, 1e-12,
            label .. ": static memory / 16 B = the model's stored parameters")
        -- rank by rank, the partition's layers
        local counts = ps.partition.resolve(how, layers, p, { flops_rate = cluster.flops_rate })
        local at = 0
        for s = 1, p do
            local want = 0
            for i = at + 1, at + counts[s] do want = want + layers[i].params end
            at = at + counts[s]
            H.near(r.static_memory[s] / BYTES_PER_PARAM, want, 1e-12,
                label .. ": stage " .. (s - 1) .. " parameters")
        end
        imb[how] = r.imbalance
    end
    H.check(imb.flops <= imb.params * (1 + 1e-12), string.format(
        "%s: FLOP-balanced imbalance %.6f <= parameter-balanced %.6f", name, imb.flops, imb.params))
    H.check(imb.flops <= imb.uniform * (1 + 1e-12), string.format(
        "%s: FLOP-balanced imbalance %.6f <= uniform %.6f", name, imb.flops, imb.uniform))
    H.near(imb.time, imb.flops, 1e-12, name .. ": 'time' from FLOPs = 'flops'")
end

-- Total parameters of the untied presets: what the stages hold is the
-- published size (within 1%), so nothing was lost on the way into ps.run.
local layers = ps.models.preset("llama3-8b")
local r = ps.run{ cluster = cluster, layers = layers, stages = 4, microbatches = 4,
    partition = "flops", record = "none" }
H.near(sum(r.static_memory) / BYTES_PER_PARAM, ps.models.published("llama3-8b"), 0.01,
    "llama3-8b: 8.03 B parameters across the stages")

-- The embedding has parameters but no FLOPs, so balancing by parameters
-- gives stage 0 less compute than balancing by FLOPs does (GPT-3 XL shape).
local gpt = ps.models.transformer{ layers = 24, hidden = 2048, heads = 16, seq = 2048,
    vocab = 50257 }
local byp = ps.partition.resolve("params", gpt, 4)
local byf = ps.partition.resolve("flops", gpt, 4)
H.check(byp[1] < byf[1], "params puts fewer layers on stage 0 than flops: "
    .. H.show(byp) .. " vs " .. H.show(byf))
local rp = ps.run{ cluster = cluster, layers = gpt, stages = 4, microbatches = 8,
    partition = "params", record = "none" }
local rf = ps.run{ cluster = cluster, layers = gpt, stages = 4, microbatches = 8,
    partition = "flops", record = "none" }
H.check(rf.imbalance <= rp.imbalance, "GPT-3 XL: flops no more imbalanced than params")
H.check(rf.makespan < rp.makespan, "GPT-3 XL: flops faster than params")

H.done()
