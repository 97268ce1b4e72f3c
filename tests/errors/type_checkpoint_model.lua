-- expect: tests/errors/type_checkpoint_model.lua:7: ps.run: field 'checkpoint' must be true or false, got 'full'
-- model layers are lowered by lua/pipesim/parallel.lua, which once read
-- only checkpoint == true and ran anything else without recompute
local ps = require "pipesim"
local layers = ps.models.transformer{ layers = 2, hidden = 256, heads = 4, seq = 128, vocab = 512 }

ps.run{ layers = layers, stages = 1, microbatches = 2, checkpoint = "full" }
