-- expect: tests/errors/empty_stage.lua:4: ps.run: partition: stage 1 has 0 layers
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 2, partition = { 2, 0 } }
