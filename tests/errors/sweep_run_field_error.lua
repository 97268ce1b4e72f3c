-- expect: tests/errors/sweep_run_field_error.lua:5: ps.sweep: 's' point_index 0 {"microbatches":0}: ps.run: field 'microbatches' must be an integer
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
-- ps.run's own message, with the point that caused it
ps.sweep{ name = "s", space = { microbatches = { 0, 4 } },
    run = function(p) return { layers = layers, stages = 2, microbatches = p.microbatches } end }
