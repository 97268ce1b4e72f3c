-- expect: tests/errors/range_roofline_field.lua:6: ps.cluster: field 'device.gemm_max' must be in (0, 1], got 1.5
local ps = require "pipesim"

local d = ps.clusters.device("H100")
d.gemm_max = 1.5
ps.cluster{ ranks = 8, device = d }
