-- expect: tests/errors/fault_link_shape.lua:4: ps.run: faults[1]: field 'link' must be a pair of ranks such as {2, 3}
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2,
  faults = { { link = 1, down = "at 1 ms" } } }
