-- expect: tests/errors/range_collective_slots.lua:4: ps.collective: field 'slots' must be an integer in 1..8, got 9
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
ps.collective{ cluster = c, op = "allreduce", algorithm = "ring", slots = 9, bytes = "1 MB" }
