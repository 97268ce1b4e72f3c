-- expect: tests/errors/layout_world_mismatch.lua:4: ps.layout: tp 8 x cp 1 x dp 4 x pp 2 is 64 ranks but the cluster has 32
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("H100", 4))
ps.layout{ tp = 8, dp = 4, pp = 2, cluster = c }
