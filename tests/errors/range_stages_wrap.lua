-- expect: tests/errors/range_stages_wrap.lua:5: ps.run: field 'stages' must be an integer in 1..1048576, got 4294967298
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = (1 << 32) + 2, microbatches = 2 }
