-- expect: tests/errors/type_layer_name.lua:5: ps.run: field 'layers[1].name' must be a string, got 5
local ps = require "pipesim"

local layers = { { fwd_time = 1, name = 5 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 2 }
