-- expect: tests/errors/fault_slow_range.lua:4: ps.run: field 'faults[2].slow' must be in (0, 1], got 1.5
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 4, microbatches = 4,
    faults = { { rank = 3, stall = "at 2 ms" }, { rank = 1, slow = 1.5 } } }
