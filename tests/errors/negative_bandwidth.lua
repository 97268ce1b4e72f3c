-- expect: tests/errors/negative_bandwidth.lua:3: ps.cluster: field 'link.bandwidth' must be positive, got -5e+09 B/s
local ps = require "pipesim"
local c = ps.cluster{ ranks = 2, link = { bandwidth = "-5 GB/s" } }
