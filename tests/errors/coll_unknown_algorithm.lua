-- expect: tests/errors/coll_unknown_algorithm.lua:4: ps.collective: unknown broadcast algorithm 'ring' (expected binomial_tree, pipeline, scatter_allgather, auto)
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
ps.collective{ cluster = c, op = "broadcast", algorithm = "ring", bytes = "1 MB" }
