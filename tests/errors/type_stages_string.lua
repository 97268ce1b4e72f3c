-- expect: tests/errors/type_stages_string.lua:5: ps.run: field 'stages' must be an integer in 1..1048576, got '2'
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = "2", microbatches = 2 }
