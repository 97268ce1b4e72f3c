-- expect: tests/errors/fault_from_with_stall.lua:4: ps.run: faults[1]: field 'from' goes with 'slow', not 'stall'
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2,
    faults = { { rank = 1, stall = "at 2 ms", from = "1 ms" } } }
