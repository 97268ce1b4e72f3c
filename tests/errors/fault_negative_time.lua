-- expect: tests/errors/fault_negative_time.lua:4: ps.run: field 'faults[1].from' must be a time >= 0, got -1
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2,
    faults = { { rank = 1, slow = 0.5, from = -1 } } }
