-- expect: tests/errors/range_collective_rank_entry.lua:5: ps.collective: field 'ranks[3]' must be an integer in 0..2147483647, got 4294967296.0
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }

ps.collective{ cluster = c, op = "allreduce", bytes = "1 MB", ranks = { 0, 1, 2^32 } }
