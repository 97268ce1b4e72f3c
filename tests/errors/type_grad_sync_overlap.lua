-- expect: tests/errors/type_grad_sync_overlap.lua:5: ps.run: field 'grad_sync.overlap' must be true or false, got 'no'
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, grad_sync = { overlap = "no" } }
