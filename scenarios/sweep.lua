-- A sweep as one call (README "Sweeps"): every contiguous split of
-- Llama-3-8B (embedding + 32 blocks + head = 34 layers) into pipeline
-- stages on one DGX A100 node, 1F1B, 8 microbatches, summary recording;
-- each run records its split in run.point, so SQL picks the best:
--   pipesim run scenarios/sweep.lua                 (4 stages: 5456 splits)
--   pipesim run scenarios/sweep.lua -D stages=6     (237,336 splits)
--   pipesim run scenarios/sweep.lua -D points=20000 --jobs 2
--   sqlite3 results/sweep.db "SELECT point, makespan FROM run
--     WHERE sweep = 'llama3-8b splits' ORDER BY makespan LIMIT 3"
-- -D quick=1 (the test suite) takes the first 300 splits.
local ps = require "pipesim"

local stages = ps.args.stages or 4
local layers = ps.models.preset("llama3-8b", { seq = 4096, microbatch = 1 })
local node = ps.clusters.dgx("A100", 1)
local cluster = ps.cluster{ ranks = stages, device = node.device, link = node.intra }

local limit = ps.args.points or (ps.args.quick and 300) or math.huge
local points = {}
for counts in ps.partition.enumerate(#layers, stages) do
    if #points >= limit then break end
    points[#points + 1] = { partition = counts }
end

local rs = ps.sweep{
    name = "llama3-8b splits",
    points = points,
    base = { cluster = cluster, layers = layers, stages = stages, microbatches = 8,
               schedule = "1f1b", record = "summary" },
}

local best = rs[1]
for _, r in ipairs(rs) do
    if r.makespan < best.makespan then best = r end
end
print(string.format("%d splits of %d layers into %d stages; best %s: %s (run %s)",
    #rs, #layers, stages, table.concat(best.point.partition, "+"), ps.seconds(best.makespan),
    tostring(best.id)))
