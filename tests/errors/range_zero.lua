-- expect: tests/errors/range_zero.lua:5: ps.run: field 'zero' must be an integer in 0..3, got 4294967296.0
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, zero = 2^32 }
