-- expect: tests/errors/range_layer_time.lua:5: ps.run: field 'layers[2].fwd_time' must not be negative, got -1
local ps = require "pipesim"

local layers = { { fwd_time = 1 }, { fwd_time = -1 } }
ps.run{ layers = layers, stages = 2, microbatches = 2 }
