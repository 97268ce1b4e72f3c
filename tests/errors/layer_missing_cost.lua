-- expect: tests/errors/layer_missing_cost.lua:4: ps.run: layers[2]: missing field 'fwd_flops' or 'fwd_time'
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { params = 10 } }
ps.run{ layers = layers, stages = 2, microbatches = 2 }
