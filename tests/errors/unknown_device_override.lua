-- expect: tests/errors/unknown_device_override.lua:4: device: overrides: unknown field 'flop' (did you mean 'flops'?)
local ps = require "pipesim"

local d = ps.clusters.device("A100", { flop = 1e12 })
