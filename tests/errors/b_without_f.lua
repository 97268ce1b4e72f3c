-- expect: tests/errors/b_without_f.lua:5: ps.run: rank 1: B1 comes before F1
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
local order = { { "F0", "F1", "B0", "B1" }, { "F0", "B0", "B1" } }
ps.run{ layers = layers, stages = 2, microbatches = 2, schedule = order }
