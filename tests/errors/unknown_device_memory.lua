-- expect: tests/errors/unknown_device_memory.lua:5: ps.cluster: device: unknown field 'memmory' (did you mean 'memory'?)
local ps = require "pipesim"

-- a misspelt capacity used to switch the memory check off
ps.cluster{ ranks = 2, device = { flops = "989 TFLOPS", memmory = "80 GB" } }
