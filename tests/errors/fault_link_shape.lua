-- expect: tests/errors/fault_link_shape.lua:4: ps.run: field 'faults[1].link' must be a pair of ranks such as {2, 3}, got 1
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2,
    faults = { { link = 1, down = "at 1 ms" } } }
