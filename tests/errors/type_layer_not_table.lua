-- expect: tests/errors/type_layer_not_table.lua:5: ps.run: field 'layers[2]' must be a table, got 5
local ps = require "pipesim"

local layers = { { fwd_time = 1 }, 5 }
ps.run{ layers = layers, stages = 2, microbatches = 2 }
