-- expect: tests/errors/coll_alltoall_uneven.lua:4: ps.collective: alltoall: bytes must split into 4 equal blocks of float32 elements (a multiple of 16), got 20
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
ps.collective{ cluster = c, op = "alltoall", bytes = 20 }
