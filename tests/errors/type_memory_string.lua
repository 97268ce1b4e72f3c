-- expect: tests/errors/type_memory_string.lua:5: ps.run: field 'memory' must be a table of bytes per parameter such as { weight_bytes = 2 }, got '-3 GB'
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, memory = "-3 GB" }
