-- expect: tests/errors/fault_bad_unit.lua:4: ps.run: field 'faults[1].stall': unknown unit in '2 parsecs'
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2,
    faults = { { rank = 1, stall = "at 2 parsecs" } } }
