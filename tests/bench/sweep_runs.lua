-- make bench (issue 12), the summary-sweep target: -D runs=N (20000)
-- summary runs of the Llama 2 7B shape (34 layers) on 4 stages of a DGX
-- A100 node, 8 microbatches, 1F1B, cycling through the contiguous
-- partitions, as one ps.sweep (base + points); -D loop=true makes the same
-- runs a plain ps.run loop instead, -D loop=true -D batch=true that loop
-- inside ps.batch. Timed by the caller from `pipesim run`
-- start to exit (tests/bench/targets.py), so Lua start-up and the database
-- count.
local ps = require "pipesim"

local N = ps.args.runs or 20000
local layers = ps.models.preset("llama2-7b", { seq = 4096, microbatch = 1 })
local node = ps.clusters.dgx("A100", 1)
local cluster = ps.cluster{ ranks = 4, device = node.device, link = node.intra }
ps.progress(false)
local parts = {}
for counts in ps.partition.enumerate(#layers, 4) do parts[#parts + 1] = counts end
local base = { name = "sweep", cluster = cluster, layers = layers, stages = 4, microbatches = 8,
               schedule = "1f1b", record = "summary" }
local function loop()
    for i = 1, N do
        local t = {}
        for k, v in pairs(base) do t[k] = v end
        t.partition = parts[(i - 1) % #parts + 1]
        ps.run(t)
    end
end
-- -D batch=true: the loop inside ps.batch (its runs commit together)
if ps.args.loop and ps.args.batch then
    ps.batch(loop)
elseif ps.args.loop then
    loop()
else
    local points = {}
    for i = 1, N do points[i] = { partition = parts[(i - 1) % #parts + 1] } end
    -- one process unless -D jobs=N (the target is on one core, and
    -- --jobs defaults to the cores): workers need --jobs 2 -D jobs=2
    ps.sweep{ name = "sweep", base = base, points = points, jobs = ps.args.jobs or 1 }
end
