-- expect: tests/errors/range_cluster_nodes_product.lua:5: ps.cluster: nodes 2048 x gpus_per_node 1024 is 2097152 ranks, more than the limit of 1048576
local ps = require "pipesim"

local link = { bandwidth = "10 GB/s" }
ps.cluster{ nodes = 2048, gpus_per_node = 1024, intra = link, inter = link }
