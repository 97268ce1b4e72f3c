-- expect: tests/errors/type_grad_sync.lua:5: ps.run: field 'grad_sync' must be a table such as { bucket = "25 MB", overlap = true }, got true
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, grad_sync = true }
