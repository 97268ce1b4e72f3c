-- expect: tests/errors/unknown_partition_field.lua:5: ps.run: partition: unknown field 'frist' (did you mean 'first'?)
local ps = require "pipesim"

local layers = ps.models.preset("toy")
ps.run{ layers = layers, stages = 2, microbatches = 2, partition = { frist = 1 } }
