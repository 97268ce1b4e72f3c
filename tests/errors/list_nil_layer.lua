-- expect: tests/errors/list_nil_layer.lua:7: ps.run: field 'layers' must be a list without holes: layers[2] is nil but layers[3] is set
local ps = require "pipesim"

local l = { fwd_time = 1 }
local layers = { l, l, l }
layers[2] = nil
ps.run{ layers = layers, stages = 1, microbatches = 2 }
