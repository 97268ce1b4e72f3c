-- expect: tests/errors/placement_range.lua:4: ps.run: field 'chunk_placement': stage 1 on rank 2 chunk 0, outside ranks 0..1 and chunks 0..0
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 2, chunk_placement = { { 0, 0 }, { 2, 0 } } }
