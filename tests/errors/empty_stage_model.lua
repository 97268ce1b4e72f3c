-- expect: tests/errors/empty_stage_model.lua:5: ps.run: partition: stage 1 has 0 layers
local ps = require "pipesim"
-- toy: embedding, 4 blocks, head = 6 layers; stage 1 gets none
local layers = ps.models.preset("toy")
ps.run{ layers = layers, stages = 3, microbatches = 4, partition = { 5, 0, 1 } }
