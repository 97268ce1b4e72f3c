-- expect: tests/errors/cluster_compute_capability.lua:4: ps.cluster: field 'compute_capability': unknown compute capability 85 (known: 60 .. 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121)
local ps = require "pipesim"
local t = ps.clusters.dgx("a100", 2, { compute_capability = 85 })
ps.cluster(t)
