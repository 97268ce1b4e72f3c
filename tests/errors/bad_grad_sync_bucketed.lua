-- expect: tests/errors/bad_grad_sync_bucketed.lua:6: ps.run: field 'grad_sync.bucketed': unknown value 'stage0' (expected all, first or none)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

local c = ps.cluster{ ranks = 4 }
ps.run{ cluster = c, layers = layers, stages = 2, dp = 2, microbatches = 2, grad_sync = { bucketed = "stage0" } }
