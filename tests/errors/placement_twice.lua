-- expect: tests/errors/placement_twice.lua:5: ps.run: field 'chunk_placement': stage 2 on rank 0 chunk 0, which stage 0 holds already
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 } }
local order = { { "F0", "B0" }, { "F0", "B0" } }
ps.run{ layers = layers, stages = 2, virtual_stages = 2, microbatches = 1, schedule = order, chunk_placement = { { 0, 0 }, { 1, 0 }, { 0, 0 }, { 1, 1 } } }
