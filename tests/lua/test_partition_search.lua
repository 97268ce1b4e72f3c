-- partition = "search": the local search over stage boundaries finds a
-- split within 0.5% of the brute-force best (every split simulated) on
-- several models, stage counts, schedules and devices, with far fewer
-- simulations; the result says how many it used. Larger cases (up to
-- ~240k splits) are in tests/bench/partition_search.lua. Runs under
-- `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local node = ps.cluster(ps.clusters.dgx("A100", 1))
-- rank 1 at 60% of the others' speed: the balanced split is not the best
local straggler = ps.cluster(ps.clusters.dgx("A100", 1, { devices = { [1] = { efficiency = 0.3 } } }))

local cases = {
    { "gpt-1.7b, 4 stages, 1F1B", { cluster = node, layers = ps.models.preset("gpt-1.7b"),
        stages = 4, microbatches = 8 } },
    { "llama2-7b, 3 stages, GPipe, dp 2", { cluster = node, layers = ps.models.preset("llama2-7b",
        { seq = 512, layers = 16 }), stages = 3, dp = 2, microbatches = 6, schedule = "gpipe" } },
    { "gpt-3.6b, 2 x 2 interleaved, full recompute", { cluster = node,
        layers = ps.models.preset("gpt-3.6b", { layers = 16 }), stages = 2, virtual_stages = 2,
        microbatches = 4, schedule = "interleaved", recompute = "full" } },
    { "plain FLOP layers on a straggler, 5 stages", { cluster = straggler, layers = (function()
        local l = {}
        for i = 1, 14 do l[i] = { fwd_flops = (i % 3 + 1) * 1e12, params = 1e6, out_bytes = 1e6 } end
        return l
    end)(), stages = 5, microbatches = 10 } },
    { "gpt-1.7b, 3 stages, TP 2, SP, selective", { cluster = node,
        layers = ps.models.preset("gpt-1.7b"), stages = 3, tp = 2, sequence_parallel = true,
        recompute = "selective", microbatches = 6 } },
}

for _, case in ipairs(cases) do
    local name, run = case[1], case[2]
    local r = ps.run(F.with(run, { partition = "search", record = "none" }))
    local best, where, n = F.brute_partition(run)
    local info = r.partition_search
    H.check(r.makespan <= best * 1.005, string.format("%s: search %.9g (%s) within 0.5%% of the " ..
        "brute-force best %.9g (%s)", name, r.makespan, table.concat(info.partition, ","), best,
        table.concat(where, ",")))
    H.check(info.simulations < n / 4, string.format("%s: %d simulations against %d splits",
        name, info.simulations, n))
    H.eq(r.makespan, info.step_time, name .. ": the run is the split found")
    H.check(info.step_time <= info.seed_step_time, name .. ": no worse than the seed")
    H.eq(F.sum(info.partition), #run.layers, name .. ": the split covers the layers")
end

-- the pure search on a known cost: the largest stage sum of weights, from
-- a poor seed, reaches the optimum of split() ("flops" balance)
local w = { 5, 1, 1, 1, 1, 5, 1, 1, 1, 1, 5, 2 }
local function bottleneck(counts)
    return ps.partition.stats(counts, w).max
end
local found, cost, evals = ps.partition.search({ 9, 1, 1, 1 }, bottleneck, w)
local _, opt = ps.partition.balanced(w, 4)
H.eq(cost, opt, "reaches the optimal bottleneck " .. table.concat(found, ","))
H.check(evals < ps.partition.count(#w, 4), "fewer evaluations than splits")

H.raises(function() ps.run { layers = { { fwd_time = 1 } }, stages = 2, partition = "search" } end,
    "ps.run: ")
H.done()
