-- expect: tests/errors/fault_two_kinds.lua:4: ps.run: faults[1]: give one of 'stall', 'slow' and 'down' per entry
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2,
    faults = { { rank = 1, stall = "at 2 ms", slow = 0.5 } } }
