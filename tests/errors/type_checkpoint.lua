-- expect: tests/errors/type_checkpoint.lua:5: ps.run: field 'checkpoint' must be true or false, got 'yes'
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, checkpoint = "yes" }
