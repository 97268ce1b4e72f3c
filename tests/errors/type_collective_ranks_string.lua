-- expect: tests/errors/type_collective_ranks_string.lua:5: ps.collective: field 'ranks' must be a table of cluster ranks such as { 0, 1, 2, 3 }, got '0,1,2,3'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }

ps.collective{ cluster = c, op = "allreduce", bytes = "1 MB", ranks = "0,1,2,3" }
