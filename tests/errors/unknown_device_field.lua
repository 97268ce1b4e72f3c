-- expect: tests/errors/unknown_device_field.lua:4: ps.cluster: device: unknown field 'eficiency' (did you mean 'efficiency'?)
local ps = require "pipesim"

ps.cluster{ ranks = 2, device = { flops = "989 TFLOPS", eficiency = 0.5 } }
