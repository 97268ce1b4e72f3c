-- expect: tests/errors/unit_embedded_nul.lua:5: ps.cluster: field 'link.latency': '5 us\0junk' contains a NUL byte
local ps = require "pipesim"

-- the text after the NUL byte used to be ignored
ps.cluster{ ranks = 2, link = { bandwidth = "50 GB/s", latency = "5 us\0junk" } }
