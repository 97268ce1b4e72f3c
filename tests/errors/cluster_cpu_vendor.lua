-- expect: tests/errors/cluster_cpu_vendor.lua:3: ps.cluster: field 'cpu_vendor': unknown CPU vendor 'amdd' (expected intel, amd or arm)
local ps = require "pipesim"
ps.cluster{ nodes = 2, gpus_per_node = 8, intra = { bandwidth = "300 GB/s" }, inter = { bandwidth = "25 GB/s" }, cpu_vendor = "amdd" }
