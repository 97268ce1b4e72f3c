-- expect: tests/errors/zero_bandwidth.lua:3: ps.cluster: field 'link.bandwidth' must be positive, got 0
local ps = require "pipesim"
local c = ps.cluster{ ranks = 2, link = { bandwidth = 0, latency = "1 us" } }
