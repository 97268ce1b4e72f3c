-- expect: tests/errors/range_collective_ranks_per_node.lua:5: ps.collective: field 'ranks_per_node' must be an integer in 1..1048576, got 1099511627776
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }

ps.collective{ cluster = c, op = "allreduce", bytes = "1 MB", ranks_per_node = 1 << 40 }
