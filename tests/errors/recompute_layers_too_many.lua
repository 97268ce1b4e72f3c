-- expect: tests/errors/recompute_layers_too_many.lua:6: ps.run: field 'recompute_layers' (3) is greater than the 2 blocks on stage 0
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("H100", 1))
local layers = ps.models.transformer{ layers = 4, hidden = 1024, heads = 16, seq = 128,
    vocab = 1024 }
ps.run{ cluster = c, layers = layers, stages = 2, microbatches = 4, recompute = "full",
    recompute_method = "block", recompute_layers = 3, partition = { 3, 3 } }
