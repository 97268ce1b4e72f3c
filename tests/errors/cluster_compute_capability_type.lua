-- expect: tests/errors/cluster_compute_capability_type.lua:3: ps.cluster: field 'compute_capability' must be an integer such as 80 (A100) or 90 (H100), got 'sm_90'
local ps = require "pipesim"
ps.cluster{ nodes = 1, gpus_per_node = 8, intra = { bandwidth = "300 GB/s" }, inter = { bandwidth = "25 GB/s" }, compute_capability = "sm_90" }
