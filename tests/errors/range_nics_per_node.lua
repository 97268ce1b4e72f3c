-- expect: tests/errors/range_nics_per_node.lua:5: ps.cluster: field 'nics_per_node' must be an integer in 1..8, got 0
local ps = require "pipesim"

local link = { bandwidth = "10 GB/s" }
ps.cluster{ nodes = 2, gpus_per_node = 8, nics_per_node = 0, intra = link, inter = link }
