-- expect: tests/errors/fault_rank_range.lua:4: ps.run: faults[1]: field 'rank': rank 9 is not a rank of the cluster (0..1)
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2,
  faults = { { rank = 9, stall = "at 2 ms" } } }
