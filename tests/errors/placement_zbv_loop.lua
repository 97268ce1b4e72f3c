-- expect: tests/errors/placement_zbv_loop.lua:4: ps.run: zbv schedule needs chunk_placement 'v', but the list places stage 2 on rank 0 chunk 1 ('v' has it on rank 1 chunk 1)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, virtual_stages = 2, microbatches = 4, schedule = "zbv", chunk_placement = { { 0, 0 }, { 1, 0 }, { 0, 1 }, { 1, 1 } } }
