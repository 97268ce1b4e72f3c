-- expect: tests/errors/tp_ranks_wrong_length.lua:6: ps.run: field 'ranks' must list 8 cluster ranks (tp 4 x stages 2 x dp 1, TP rank innermost), got 2
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("H100", 1))
local layers = ps.models.transformer{ layers = 4, hidden = 1024, heads = 16, seq = 128,
    vocab = 1024 }
ps.run{ cluster = c, layers = layers, stages = 2, microbatches = 4, tp = 4, ranks = { 0, 4 } }
