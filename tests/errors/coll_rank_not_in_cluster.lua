-- expect: tests/errors/coll_rank_not_in_cluster.lua:4: ps.collective: allreduce: rank 8 is not in the cluster (ranks 0..7)
local ps = require "pipesim"
local c = ps.cluster{ ranks = 8, link = { bandwidth = "25 GB/s", latency = "5 us" } }
ps.collective{ cluster = c, op = "allreduce", bytes = "1 MB", ranks = { 0, 4, 8 } }
