-- expect: tests/errors/cyclic_layers.lua:6: ps.run: layers[3]: unknown field [1]
local ps = require "pipesim"

local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
layers[3] = layers
ps.run{ layers = layers, stages = 2, microbatches = 2 }
