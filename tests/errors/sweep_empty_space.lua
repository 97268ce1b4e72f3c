-- expect: tests/errors/sweep_empty_space.lua:4: ps.sweep: field 'space' is empty (give each coordinate a list of values, such as space = { microbatches = { 8, 16 } })
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.sweep{ name = "s", space = {},
    run = function(p) return { layers = layers, stages = 2, microbatches = p.microbatches } end }
