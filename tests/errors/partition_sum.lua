-- expect: tests/errors/partition_sum.lua:4: ps.run: partition sums to 3 layers but the model has 4
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 4, partition = { 1, 2 } }
