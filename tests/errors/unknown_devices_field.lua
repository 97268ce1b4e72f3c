-- expect: tests/errors/unknown_devices_field.lua:4: ps.cluster: devices[3]: unknown field 'flop' (did you mean 'flops'?)
local ps = require "pipesim"

ps.cluster{ ranks = 4, device = { flops = "989 TFLOPS" },
    devices = { [3] = { flop = "500 TFLOPS" } } }
