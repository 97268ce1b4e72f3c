-- expect: tests/errors/unknown_grad_sync_field.lua:6: ps.run: grad_sync: unknown field 'overlapp' (did you mean 'overlap'?)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

local c = ps.cluster{ ranks = 4 }
ps.run{ cluster = c, layers = layers, stages = 2, dp = 2, microbatches = 2,
    grad_sync = { bucket = "25 MB", overlapp = false } }
