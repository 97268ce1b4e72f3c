-- expect: tests/errors/type_collective_seed.lua:5: ps.collective: field 'seed' must be an integer, got 1.5
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }

ps.collective{ cluster = c, op = "allreduce", bytes = 64, verify = true, seed = 1.5 }
