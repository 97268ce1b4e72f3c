-- expect: tests/errors/unknown_inter_field.lua:4: ps.cluster: inter: unknown field 'bandwidht' (did you mean 'bandwidth'?)
local ps = require "pipesim"

ps.cluster{ nodes = 2, gpus_per_node = 2,
    intra = { bandwidth = "450 GB/s", latency = "2 us" },
    inter = { bandwidht = "50 GB/s", latency = "5 us" } }
