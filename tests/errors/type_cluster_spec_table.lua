-- expect: tests/errors/type_cluster_spec_table.lua:6: ps.run: field 'cluster' must be a cluster made by ps.cluster{...}
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

-- the table ps.clusters.dgx returns goes through ps.cluster first
ps.run{ cluster = ps.clusters.dgx("H100", 1), layers = layers, stages = 2, microbatches = 2 }
