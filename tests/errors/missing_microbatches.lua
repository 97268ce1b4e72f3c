-- expect: tests/errors/missing_microbatches.lua:4: ps.run: missing field 'microbatches'
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2 }
