-- expect: tests/errors/range_tp.lua:6: ps.run: field 'tp' must be an integer in 1..1048576, got 4294967296
local ps = require "pipesim"

-- tp was looped over before anything checked it (a hang)
local layers = ps.models.preset("toy")
ps.run{ layers = layers, stages = 2, microbatches = 2, tp = 1 << 32 }
