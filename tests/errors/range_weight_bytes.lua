-- expect: tests/errors/range_weight_bytes.lua:5: ps.run: field 'memory.weight_bytes' must not be negative, got -3
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, memory = { weight_bytes = -3 } }
