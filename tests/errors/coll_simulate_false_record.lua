-- expect: tests/errors/coll_simulate_false_record.lua:4: ps.collective: field 'record': 'summary' records a run, and simulate = false runs nothing (drop it or use "none")
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
ps.collective{ cluster = c, op = "allreduce", bytes = 64, record = "summary", simulate = false }
