-- expect: tests/errors/unknown_run_positional.lua:5: ps.run: unknown field [1]
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers, stages = 2, microbatches = 2 }
