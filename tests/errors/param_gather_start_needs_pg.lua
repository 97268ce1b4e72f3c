-- expect: tests/errors/param_gather_start_needs_pg.lua:6: ps.run: field 'grad_sync.param_gather_start' needs grad_sync.overlap_param_gather = true (it says when those all-gathers go out)
local ps = require "pipesim"

local c = ps.cluster { ranks = 2, device = { flops = 1e12 }, link = { bandwidth = 1e9, latency = 1e-6 } }
local layers = { { fwd_time = 1, params = 1e6 } }
ps.run { cluster = c, layers = layers, stages = 1, microbatches = 1, dp = 2, zero = 1, grad_sync = { param_gather_start = "step" } }
