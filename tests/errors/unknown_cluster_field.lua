-- expect: tests/errors/unknown_cluster_field.lua:4: ps.cluster: unknown field 'gpus_per_nod' (did you mean 'gpus_per_node'?)
local ps = require "pipesim"

ps.cluster{ nodes = 2, gpus_per_nod = 8,
    intra = { bandwidth = "450 GB/s" }, inter = { bandwidth = "50 GB/s" } }
