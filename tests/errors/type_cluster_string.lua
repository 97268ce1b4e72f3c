-- expect: tests/errors/type_cluster_string.lua:6: ps.run: field 'cluster' must be a cluster made by ps.cluster{...} (e.g. ps.cluster(ps.clusters.dgx("H100", 2))), got 'H100'
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

-- a device name is not a cluster
ps.run{ cluster = "H100", layers = layers, stages = 2, microbatches = 2 }
