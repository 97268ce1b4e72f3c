-- expect: tests/errors/range_oversubscription.lua:5: ps.cluster: field 'oversubscription' must be >= 1, got 0.5
local ps = require "pipesim"

local link = { bandwidth = "10 GB/s" }
ps.cluster{ nodes = 2, gpus_per_node = 2, oversubscription = 0.5, intra = link, inter = link }
