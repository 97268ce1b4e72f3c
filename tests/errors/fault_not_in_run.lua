-- expect: tests/errors/fault_not_in_run.lua:5: ps.run: faults[1]: rank 5 takes no part in this run
local ps = require "pipesim"
local c = ps.cluster{ ranks = 8, link = { bandwidth = "25 GB/s", latency = "5 us" } }
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ cluster = c, layers = l, stages = 2, microbatches = 2, faults = { { rank = 5, stall = 0 } } }
