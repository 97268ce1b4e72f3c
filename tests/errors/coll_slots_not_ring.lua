-- expect: tests/errors/coll_slots_not_ring.lua:4: ps.collective: allreduce: slots = 8 applies to ring, and to tree off a mesh (tree runs step by step on a mesh: slots = 1)
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
ps.collective{ cluster = c, op = "allreduce", algorithm = "tree", slots = 8, bytes = "1 MB" }
