-- expect: tests/errors/sp_without_tp.lua:6: ps.run: field 'sequence_parallel' needs tp > 1 (got tp = 1)
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("H100", 1))
local layers = ps.models.transformer{ layers = 4, hidden = 1024, heads = 16, seq = 128,
    vocab = 1024 }
ps.run{ cluster = c, layers = layers, stages = 2, microbatches = 4, sequence_parallel = true }
