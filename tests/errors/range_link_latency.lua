-- expect: tests/errors/range_link_latency.lua:4: ps.cluster: field 'link.latency' must not be negative, got -1e-06 s
local ps = require "pipesim"

ps.cluster{ ranks = 2, link = { bandwidth = "50 GB/s", latency = -1e-6 } }
