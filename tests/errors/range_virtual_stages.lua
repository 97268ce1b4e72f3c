-- expect: tests/errors/range_virtual_stages.lua:5: ps.run: field 'virtual_stages' must be an integer in 1..32767, got 65536.0
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, virtual_stages = 2^16 }
