-- expect: tests/errors/fault_link_self.lua:4: ps.collective: field 'faults[1].link' joins rank 2 to itself
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
ps.collective{ cluster = c, op = "allreduce", bytes = "1 MB",
    faults = { { link = { 2, 2 }, down = "at 1 ms" } } }
