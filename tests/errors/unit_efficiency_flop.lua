-- expect: tests/errors/unit_efficiency_flop.lua:5: ps.cluster: field 'device.efficiency': '0.5 TFLOP' is a flop count, expected a number (e.g. 0.5 or "50%")
local ps = require "pipesim"

-- an efficiency is a fraction, not a FLOP count
ps.cluster{ ranks = 2, device = { flops = "989 TFLOPS", efficiency = "0.5 TFLOP" } }
