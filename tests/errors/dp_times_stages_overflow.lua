-- expect: tests/errors/dp_times_stages_overflow.lua:5: ps.run: field 'dp' must be an integer in 1..1048576, got 1073741824.0
-- dp x stages wrapped in int32 (UBSan: signed overflow in bind/run.c)
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2, dp = 2^30 }
