-- expect: tests/errors/range_microbatches_wrap.lua:6: ps.run: field 'microbatches' must be an integer in 1..2147483647, got 4294967304.0
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

-- 2^32 + 8 used to run as 8 microbatches
ps.run{ layers = layers, stages = 2, microbatches = 2^32 + 8 }
