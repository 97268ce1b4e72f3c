-- expect: tests/errors/range_devices_key.lua:4: ps.cluster: field 'devices': key '3' is not a rank of this cluster (0..3)
local ps = require "pipesim"

ps.cluster{ ranks = 4, devices = { ["3"] = { flops = "1 TFLOPS" } } }
