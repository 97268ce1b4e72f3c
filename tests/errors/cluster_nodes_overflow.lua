-- expect: tests/errors/cluster_nodes_overflow.lua:5: ps.cluster: field 'nodes' must be an integer in 1..1048576, got 1099511627776.0
-- nodes x gpus_per_node overflowed even long long (UBSan in bind/cluster.c)
local ps = require "pipesim"
local link = { bandwidth = "10 GB/s" }
ps.cluster{ nodes = 2^40, gpus_per_node = 2^40, intra = link, inter = link }
