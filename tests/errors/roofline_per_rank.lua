-- expect: tests/errors/roofline_per_rank.lua:5: ps.cluster: devices[3]: field 'gemm_max' is a roofline constant, which only the cluster's device takes
local ps = require "pipesim"

-- the roofline constants are the cluster device's; an override is plain
ps.cluster{ ranks = 8, device = ps.clusters.device("H100"),
    devices = { [3] = ps.clusters.device("A100") } }
