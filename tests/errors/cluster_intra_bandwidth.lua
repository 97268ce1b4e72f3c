-- expect: tests/errors/cluster_intra_bandwidth.lua:3: ps.cluster: field 'intra.bandwidth' must be positive, got 0 B/s
local ps = require "pipesim"
ps.cluster{ nodes = 2, gpus_per_node = 8, intra = { bandwidth = "0 GB/s", latency = "2 us" },
    inter = { bandwidth = "400 Gb/s", latency = "5 us" } }
