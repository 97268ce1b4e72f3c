-- expect: tests/errors/dualpipe_odd_stages.lua:4: ps.run: dualpipe schedule needs an even number of stages and 2 chunks per rank, got 3 stages, 2 chunks
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 3, microbatches = 6, schedule = "dualpipe" }
