-- partition = "search" against brute force on cases too large for `make
-- test` (tens of thousands to ~240k splits, minutes): every split is
-- simulated (record = "none") and the search must land within 0.5% of the
-- best. Prints one line per case: splits, brute-force best, the search's
-- result and its simulation count. Not run by `make test`:
--   build/pipesim run tests/lua/bench_partition_search.lua
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local node = ps.cluster(ps.clusters.dgx("H100", 1))
local cases = {
    { "llama3-8b, 6 stages", { layers = ps.models.preset("llama3-8b"), stages = 6, microbatches = 8 } },
    { "gpt-1.7b, 6 stages", { layers = ps.models.preset("gpt-1.7b"), stages = 6, microbatches = 12 } },
    { "llama2-7b, 5 stages, full recompute", { layers = ps.models.preset("llama2-7b"), stages = 5,
        microbatches = 10, recompute = "full" } },
}
for _, case in ipairs(cases) do
    local name, run = case[1], case[2]
    run.cluster = node
    local t0 = os.clock()
    local best, _, n = F.brute_partition(run)
    local brute_s = os.clock() - t0
    t0 = os.clock()
    local r = ps.run(F.with(run, { partition = "search", record = "none" }))
    local search_s = os.clock() - t0
    print(string.format("%-36s %7d splits: brute force %.6f s (%.1f s CPU); search %.6f s " ..
        "(%+.3f%%) in %d simulations (%.2f s CPU)", name, n, best, brute_s, r.makespan,
        100 * (r.makespan / best - 1), r.partition_search.simulations, search_s))
    H.check(r.makespan <= best * 1.005, name .. ": within 0.5% of the brute-force best")
end
H.done()
