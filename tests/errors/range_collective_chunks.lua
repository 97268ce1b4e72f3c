-- expect: tests/errors/range_collective_chunks.lua:5: ps.collective: field 'chunks' must be an integer in 1..1048576, got 4294967300.0
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }

ps.collective{ cluster = c, op = "allreduce", bytes = "1 MB", chunks = 2^32 + 4 }
