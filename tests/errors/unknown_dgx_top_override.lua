-- expect: tests/errors/unknown_dgx_top_override.lua:4: dgx: overrides: unknown field 'nics_per_nod' (did you mean 'nics_per_node'?)
local ps = require "pipesim"

local spec = ps.clusters.dgx("H100", 2, { nics_per_nod = 4 })
