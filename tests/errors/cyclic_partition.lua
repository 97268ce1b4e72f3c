-- expect: tests/errors/cyclic_partition.lua:7: ps.run: partition: stage 1 count must be an integer, got table
local ps = require "pipesim"

local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
local p = { 1 }
p[2] = p
ps.run{ layers = layers, stages = 2, microbatches = 2, partition = p }
