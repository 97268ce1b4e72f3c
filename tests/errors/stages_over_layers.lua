-- expect: tests/errors/stages_over_layers.lua:4: ps.run: 4 stages but only 2 layers
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 4, microbatches = 4 }
