-- expect: tests/errors/coll_root_outside_ranks.lua:5: ps.collective: broadcast: root 1 is not among the ranks
local ps = require "pipesim"
local c = ps.cluster{ ranks = 8, link = { bandwidth = "25 GB/s", latency = "5 us" } }
-- root is a cluster rank that must be one of the listed ranks
ps.collective{ cluster = c, op = "broadcast", bytes = "1 MB", ranks = { 0, 2, 4 }, root = 1 }
