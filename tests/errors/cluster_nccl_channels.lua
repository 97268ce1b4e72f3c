-- expect: tests/errors/cluster_nccl_channels.lua:3: ps.cluster: field 'nccl_channels' must be an integer in 1..64, got 0
local ps = require "pipesim"
ps.cluster{ nodes = 1, gpus_per_node = 8, intra = { bandwidth = "300 GB/s" }, inter = { bandwidth = "25 GB/s" }, nccl_channels = 0 }
