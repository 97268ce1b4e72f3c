-- make bench (issue 12), the summary-sweep target: -D runs=N (20000)
-- ps.run calls with record = "summary", Llama 2 7B shape (34 layers) on 4
-- stages of a DGX A100 node, 8 microbatches, 1F1B, cycling through the
-- contiguous partitions; timed by the caller from `pipesim run` start to
-- exit (tests/bench/targets.py), so Lua start-up and the database count.
local ps = require "pipesim"

local N = ps.args.runs or 20000
local layers = ps.models.preset("llama2-7b", { seq = 4096, microbatch = 1 })
local node = ps.clusters.dgx("A100", 1)
local cluster = ps.cluster{ ranks = 4, device = node.device, link = node.intra }
ps.progress(false)
local parts = {}
for counts in ps.partition.enumerate(#layers, 4) do parts[#parts + 1] = counts end
for i = 1, N do
    ps.run{ name = "sweep", cluster = cluster, layers = layers, stages = 4, microbatches = 8,
        schedule = "1f1b", partition = parts[(i - 1) % #parts + 1], record = "summary" }
end
