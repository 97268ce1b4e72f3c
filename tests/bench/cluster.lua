-- make bench (issues 23 and 28): building a DGX H100 cluster of
-- -D nodes=N 8-GPU nodes (2048: 16,384 GPUs; 12500: 100,000 GPUs), the
-- whole process timed by tests/bench/targets.py.
--   build/pipesim run --unsafe tests/bench/cluster.lua -D nodes=12500
local ps = require "pipesim"
local nodes = ps.args.nodes or 2048
ps.progress(false)
local c = ps.cluster(ps.clusters.dgx("H100", nodes))
print(string.format("pipesim cluster: %d nodes, %d GPUs", c.nodes, c.ranks))
