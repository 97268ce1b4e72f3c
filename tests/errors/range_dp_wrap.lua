-- expect: tests/errors/range_dp_wrap.lua:6: ps.run: field 'dp' must be an integer in 1..1048576, got 4294967297
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

-- (1 << 32) + 1 used to run as dp = 1
ps.run{ layers = layers, stages = 2, microbatches = 2, dp = (1 << 32) + 1 }
