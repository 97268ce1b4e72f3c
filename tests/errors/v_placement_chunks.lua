-- expect: tests/errors/v_placement_chunks.lua:4: ps.run: chunk_placement 'v' needs 2 chunks per rank (virtual_stages 2), got 3
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, virtual_stages = 3, microbatches = 4, schedule = "zbv" }
