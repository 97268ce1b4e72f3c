-- expect: tests/errors/unknown_layer_field.lua:5: ps.run: layers[3]: unknown field 'bwd_tim' (did you mean 'bwd_time'?)
local ps = require "pipesim"

local layers = { { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1, bwd_tim = 5 } }
ps.run{ layers = layers, stages = 3, microbatches = 2 }
