-- expect: tests/errors/range_grad_sync_bucket.lua:6: ps.run: field 'grad_sync.bucket' must be positive, got 0
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

local c = ps.cluster{ ranks = 4 }
ps.run{ cluster = c, layers = layers, stages = 2, dp = 2, microbatches = 2, grad_sync = { bucket = 0 } }
