-- expect: tests/errors/unknown_roofline_field.lua:6: ps.cluster: device: unknown field 'hbm_bandwdth' (did you mean 'hbm_bandwidth'?)
local ps = require "pipesim"

local d = ps.clusters.device("H100")
d.hbm_bandwdth = 3e12
ps.cluster{ ranks = 8, device = d }
