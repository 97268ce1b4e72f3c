-- expect: tests/errors/unknown_recompute.lua:6: ps.run: field 'recompute': unknown mode 'partial' (expected none, selective or full)
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("H100", 1))
local layers = ps.models.transformer{ layers = 4, hidden = 1024, heads = 16, seq = 128,
    vocab = 1024 }
ps.run{ cluster = c, layers = layers, stages = 2, microbatches = 4, recompute = "partial" }
