-- expect: tests/errors/fault_unknown_field.lua:4: ps.run: faults[1]: unknown field 'stal'
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2,
    faults = { { rank = 1, stal = "at 2 ms" } } }
