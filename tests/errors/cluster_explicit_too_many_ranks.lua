-- expect: tests/errors/cluster_explicit_too_many_ranks.lua:6: ps.cluster: a network of explicit links has at most 16384 ranks (a route per pair of ranks), got 65536; a mesh or nodes x gpus_per_node has no such limit
-- A route table per pair of 65536 ranks needs 4e9 entries and overflowed
-- its int32 offsets; it is refused in one line (a mesh and a cluster of
-- nodes work at any size: tests/errors has no limit for them).
local ps = require "pipesim"
ps.cluster{ ranks = 65536, links = { { 0, 1, bandwidth = "50 GB/s" } } }
