-- expect: tests/errors/wrong_unit_kind.lua:3: ps.cluster: field 'link.latency': '5 GB' is a size in bytes, expected a time
local ps = require "pipesim"
local c = ps.cluster{ ranks = 2, link = { bandwidth = "50 GB/s", latency = "5 GB" } }
