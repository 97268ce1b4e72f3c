-- expect: tests/errors/w_before_b.lua:5: ps.run: rank 0: W0 comes before B0
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
local order = { { "F0", "W0", "B0" }, { "F0", "B0", "W0" } }
ps.run{ layers = layers, stages = 2, microbatches = 1, schedule = order }
