-- expect: tests/errors/unknown_preset.lua:3: unknown model preset 'gpt5' (known: deepseek-v3, gpt-1.7b, gpt-145b,
local ps = require "pipesim"
local layers = ps.models.preset("gpt5", { seq = 2048 })
ps.run{ layers = layers, stages = 4, microbatches = 8 }
