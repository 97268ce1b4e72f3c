-- expect: tests/errors/unknown_run_field.lua:5: ps.run: unknown field 'stage' (did you mean 'stages'?)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stage = 2, microbatches = 2 }
