-- expect: tests/errors/cluster_unreachable_rank.lua:4: ps.cluster: no route from rank 0 to rank 3
local ps = require "pipesim"
-- rank 3 has no cable
ps.cluster{ ranks = 4, links = { { 0, "sw", bandwidth = "50 GB/s" }, { 1, "sw", bandwidth = "50 GB/s" }, { 2, "sw", bandwidth = "50 GB/s" } } }
