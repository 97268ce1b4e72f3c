-- expect: tests/errors/unit_scaled_overflow_either.lua:5: ps.cluster: field 'device.flops': '1e308 PFLOPs' is not a finite number
-- Found by fuzz_unit: units that name a count or a rate ("PFLOPs") were
-- scaled without the finiteness check, so an infinite rate was accepted.
local ps = require "pipesim"
ps.cluster{ ranks = 2, device = { flops = "1e308 PFLOPs" } }
