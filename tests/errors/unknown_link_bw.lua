-- expect: tests/errors/unknown_link_bw.lua:4: ps.cluster: link: unknown field 'bw' (known: bandwidth, latency)
local ps = require "pipesim"

ps.cluster{ ranks = 2, link = { bw = "50 GB/s" } }
