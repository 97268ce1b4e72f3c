-- expect: tests/errors/unknown_memory_field.lua:5: ps.run: memory: unknown field 'weight_byte' (did you mean 'weight_bytes'?)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, memory = { weight_byte = 100 } }
