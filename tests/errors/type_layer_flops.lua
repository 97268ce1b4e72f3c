-- expect: tests/errors/type_layer_flops.lua:5: ps.run: field 'layers[2].fwd_flops' must be a number or a string with units such as "3.5 TFLOP", got true
local ps = require "pipesim"

local layers = { { fwd_time = 1 }, { fwd_time = 1, fwd_flops = true } }
ps.run{ layers = layers, stages = 2, microbatches = 2 }
