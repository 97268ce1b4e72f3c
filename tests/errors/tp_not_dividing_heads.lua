-- expect: tests/errors/tp_not_dividing_heads.lua:6: ps.run: tp = 8 does not divide the model's heads (12)
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("A100", 1))
local layers = ps.models.transformer{ layers = 2, hidden = 768, heads = 12, seq = 128,
    vocab = 1024 }
ps.run{ cluster = c, layers = layers, stages = 1, microbatches = 1, tp = 8 }
