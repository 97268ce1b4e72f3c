-- expect: tests/errors/range_microbatches_1e12.lua:5: ps.run: field 'microbatches' must be an integer in 1..2147483647, got 1000000000000.0
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 1e12 }
