-- expect: tests/errors/range_roofline_attention.lua:6: ps.cluster: field 'device.attention_fwd' must be in (0, 1], got 1.5
local ps = require "pipesim"

local d = ps.clusters.device("H100")
d.attention_fwd = 1.5
ps.cluster{ ranks = 8, device = d }
