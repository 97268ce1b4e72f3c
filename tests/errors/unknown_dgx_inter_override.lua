-- expect: tests/errors/unknown_dgx_inter_override.lua:4: dgx: overrides.inter: unknown field 'bandwith' (did you mean 'bandwidth'?)
local ps = require "pipesim"

local spec = ps.clusters.dgx("H100", 2, { inter = { bandwith = "25 GB/s" } })
