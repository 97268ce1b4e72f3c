-- expect: tests/errors/coll_simulate_false_verify.lua:4: ps.collective: field 'verify' needs a simulated collective; simulate = false only predicts
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
ps.collective{ cluster = c, op = "allreduce", bytes = 64, verify = true, simulate = false }
