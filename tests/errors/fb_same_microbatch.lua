-- expect: tests/errors/fb_same_microbatch.lua:5: ps.run: rank 1: FB1/1 overlaps the forward and the backward of one microbatch, which cannot run at once
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
local order = { { "F0", "F1", "B0", "B1" }, { "F0", "B0", "FB1/1" } }
ps.run{ layers = layers, stages = 2, microbatches = 2, schedule = order }
