-- expect: tests/errors/fault_slow_collective.lua:4: ps.collective: faults[1]: 'slow' does not apply to a collective (it has no compute ops)
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
ps.collective{ cluster = c, op = "allreduce", bytes = "1 MB",
    faults = { { rank = 1, slow = 0.5 } } }
