-- expect: tests/errors/coll_negative_bytes.lua:4: ps.collective: allreduce: bytes must be zero or positive, got -4096
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
ps.collective{ cluster = c, op = "allreduce", bytes = -4096 }
