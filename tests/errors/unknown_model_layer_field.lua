-- expect: tests/errors/unknown_model_layer_field.lua:8: ps.run: layers[3]: unknown field 'bwd_tim' (did you mean 'bwd_time'?)
local ps = require "pipesim"

-- a model layer (with a shape) goes through tensor-parallel lowering; its
-- fields are checked before
local layers = ps.models.preset("toy")
layers[3].bwd_tim = 1
ps.run{ layers = layers, stages = 2, microbatches = 2 }
