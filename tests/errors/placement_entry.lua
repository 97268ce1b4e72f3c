-- expect: tests/errors/placement_entry.lua:4: ps.run: field 'chunk_placement': entry 2 (stage 1) must be { rank, chunk }, integers from 0
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 2, chunk_placement = { { 0, 0 }, { 1 } } }
