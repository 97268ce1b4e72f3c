-- expect: tests/errors/type_collective_verify.lua:5: ps.collective: field 'verify' must be true or false, got 1
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }

ps.collective{ cluster = c, op = "allreduce", bytes = 64, verify = 1 }
