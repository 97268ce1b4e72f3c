-- expect: tests/errors/cluster_routed_too_many_ranks.lua:6: ps.cluster: a network with switches or explicit links has at most 16384 ranks (a route per pair of ranks), got 65536; a mesh has no such limit
-- A route table per pair of 65536 ranks needs 4e9 entries and overflowed
-- its int32 offsets; it is refused in one line (a mesh works at any size).
local ps = require "pipesim"
local link = { bandwidth = "50 GB/s" }
ps.cluster{ nodes = 8192, gpus_per_node = 8, intra = link, inter = link }
