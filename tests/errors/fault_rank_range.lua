-- expect: tests/errors/fault_rank_range.lua:4: ps.run: field 'faults[1].rank' must be an integer in 0..1, got 9
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2,
    faults = { { rank = 9, stall = "at 2 ms" } } }
