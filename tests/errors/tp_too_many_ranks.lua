-- expect: tests/errors/tp_too_many_ranks.lua:6: ps.run: tp 8 x stages 2 x dp 2 need 32 ranks but the cluster has 16
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("H100", 2))
local layers = ps.models.transformer{ layers = 4, hidden = 1024, heads = 16, seq = 128,
    vocab = 1024 }
ps.run{ cluster = c, layers = layers, stages = 2, dp = 2, microbatches = 4, tp = 8 }
