-- expect: tests/errors/sweep_bad_run_result.lua:5: ps.sweep: 's' point_index 1 {"microbatches":4}: run must return a ps.run (or ps.collective) table, got nil
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
-- the second point's run forgets its return
ps.sweep{ name = "s", space = { microbatches = { 2, 4 } }, jobs = 1,
    run = function(p)
        if p.microbatches == 2 then return { layers = layers, stages = 2, microbatches = 2 } end
    end }
