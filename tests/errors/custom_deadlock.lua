-- expect: tests/errors/custom_deadlock.lua:6: ps.run: deadlock at t=
local ps = require "pipesim"
local layers = { { fwd_time = 1, out_bytes = 8 }, { fwd_time = 1, out_bytes = 8 } }
-- rank 1 insists on microbatch 1 first while rank 0 sends microbatch 0 first
local order = { { "F0", "F1", "B0", "B1" }, { "F1", "F0", "B1", "B0" } }
ps.run{ layers = layers, stages = 2, microbatches = 2, schedule = order }
