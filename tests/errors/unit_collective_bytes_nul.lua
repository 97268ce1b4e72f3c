-- expect: tests/errors/unit_collective_bytes_nul.lua:5: ps.collective: field 'bytes': '1 MB\0 and more' contains a NUL byte
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }

ps.collective{ cluster = c, op = "allreduce", bytes = "1 MB\0 and more" }
