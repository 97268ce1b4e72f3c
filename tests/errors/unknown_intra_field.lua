-- expect: tests/errors/unknown_intra_field.lua:4: ps.cluster: intra: unknown field 'latncy' (did you mean 'latency'?)
local ps = require "pipesim"

ps.cluster{ nodes = 2, gpus_per_node = 2,
    intra = { bandwidth = "450 GB/s", latncy = "2 us" },
    inter = { bandwidth = "50 GB/s", latency = "5 us" } }
