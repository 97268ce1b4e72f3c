-- expect: tests/errors/range_collective_root.lua:5: ps.collective: field 'root' must be an integer in 0..2147483647, got 4294967297
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }

ps.collective{ cluster = c, op = "broadcast", bytes = "1 MB", root = (1 << 32) + 1 }
