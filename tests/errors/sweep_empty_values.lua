-- expect: tests/errors/sweep_empty_values.lua:4: ps.sweep: field 'space.schedule' is an empty list (the sweep would have no points)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.sweep{ name = "s", space = { microbatches = { 2, 4 }, schedule = {} },
    run = function(p) return { layers = layers, stages = 2, microbatches = p.microbatches } end }
