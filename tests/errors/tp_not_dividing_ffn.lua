-- expect: tests/errors/tp_not_dividing_ffn.lua:6: ps.run: tp = 4 does not divide the model's ffn_hidden (1002)
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("A100", 1))
local layers = ps.models.transformer{ layers = 2, hidden = 256, heads = 8, seq = 128,
    vocab = 1024, ffn_hidden = 1002 }
ps.run{ cluster = c, layers = layers, stages = 1, microbatches = 1, tp = 4 }
