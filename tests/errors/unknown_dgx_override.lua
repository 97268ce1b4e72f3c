-- expect: tests/errors/unknown_dgx_override.lua:4: dgx: overrides.device: unknown field 'eficiency' (did you mean 'efficiency'?)
local ps = require "pipesim"

local spec = ps.clusters.dgx("H100", 2, { device = { eficiency = 0.4 } })
