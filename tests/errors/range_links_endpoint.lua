-- expect: tests/errors/range_links_endpoint.lua:4: ps.cluster: field 'links[1]': rank 4294967297 is not in the cluster (ranks 0..1)
local ps = require "pipesim"

ps.cluster{ ranks = 2, links = { { 0, (1 << 32) + 1, bandwidth = "50 GB/s" } } }
