-- expect: tests/errors/type_run_name.lua:5: ps.run: field 'name' must be a string, got a table
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, name = {} }
