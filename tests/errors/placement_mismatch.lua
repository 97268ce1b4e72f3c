-- expect: tests/errors/placement_mismatch.lua:5: ps.run: interleaved schedule needs chunk_placement 'loop', but the list places stage 2 on rank 1 chunk 1 ('loop' has it on rank 0 chunk 1)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 } }
local v = { { 0, 0 }, { 1, 0 }, { 1, 1 }, { 0, 1 } }
ps.run{ layers = layers, stages = 2, virtual_stages = 2, microbatches = 4, schedule = "interleaved", chunk_placement = v }
