-- expect: tests/errors/coll_nvls_without_switch.lua:4: ps.collective: allreduce: algorithm 'nvls' needs NVSwitches with NVLink SHARP (a cluster with nvls = true, such as ps.clusters.dgx("h100")); this cluster has none
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("a100", 1))
ps.collective{ cluster = c, op = "allreduce", algorithm = "nvls", bytes = "64 MB" }
