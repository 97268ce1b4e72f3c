-- expect: tests/errors/sweep_unknown_field.lua:4: ps.sweep: unknown field 'spaces' (did you mean 'space'?)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.sweep{ name = "s", spaces = { microbatches = { 2, 4 } },
    run = function(p) return { layers = layers, stages = 2, microbatches = p.microbatches } end }
