-- expect: tests/errors/missing_layers.lua:3: ps.run: missing field 'layers'
local ps = require "pipesim"
ps.run{ stages = 2, microbatches = 4 }
