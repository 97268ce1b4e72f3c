-- expect: tests/errors/unknown_unit.lua:3: ps.cluster: field 'link.bandwidth': unknown unit in '50 GB/z'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 2, link = { bandwidth = "50 GB/z" } }
