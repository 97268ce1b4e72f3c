-- expect: tests/errors/range_device_flops.lua:4: ps.cluster: field 'device.flops' must be positive, got -1
local ps = require "pipesim"

ps.cluster{ ranks = 2, device = { flops = -1 } }
