-- expect: tests/errors/range_devices_efficiency.lua:4: ps.cluster: field 'devices[2].efficiency' must be in (0, 1], got 1.5
local ps = require "pipesim"

ps.cluster{ ranks = 4, device = { flops = "989 TFLOPS" }, devices = { [2] = { efficiency = 1.5 } } }
