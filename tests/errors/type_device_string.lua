-- expect: tests/errors/type_device_string.lua:4: ps.cluster: field 'device' must be a table such as { flops = "989 TFLOPS", memory = "80 GB" } or ps.clusters.device("H100"), got 'H100'
local ps = require "pipesim"

ps.cluster{ ranks = 8, device = "H100" }
