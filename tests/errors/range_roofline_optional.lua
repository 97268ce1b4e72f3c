-- expect: tests/errors/range_roofline_optional.lua:6: ps.cluster: field 'device.sms' must be a positive number, got 0
local ps = require "pipesim"

local d = ps.clusters.device("H100")
d.sms = 0
ps.cluster{ ranks = 8, device = d }
