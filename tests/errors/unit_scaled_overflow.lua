-- expect: tests/errors/unit_scaled_overflow.lua:5: ps.cluster: field 'device.flops': '1e308 PFLOPS' is not a finite number
-- Found by fuzz_unit: the number is finite, its product with the unit is
-- not, and the infinite rate was accepted.
local ps = require "pipesim"
ps.cluster{ ranks = 2, device = { flops = "1e308 PFLOPS" } }
