-- expect: tests/errors/unit_roofline_flops.lua:6: ps.cluster: field 'device.flops': unknown unit in '989 TFLOPZ'
local ps = require "pipesim"

local d = ps.clusters.device("H100")
d.flops = "989 TFLOPZ"
ps.cluster{ ranks = 8, device = d }
