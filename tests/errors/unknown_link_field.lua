-- expect: tests/errors/unknown_link_field.lua:5: ps.cluster: link: unknown field 'bandwith' (did you mean 'bandwidth'?)
local ps = require "pipesim"

-- a misspelt bandwidth used to make communication free
ps.cluster{ ranks = 2, link = { bandwith = "50 GB/s", latency = "5 us" } }
