-- expect: tests/errors/fault_duplicate.lua:4: ps.run: faults[2]: a second 'stall' fault on rank 1 (the first is faults[1])
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2,
    faults = { { rank = 1, stall = "at 2 ms" }, { rank = 1, stall = "at 3 ms" } } }
