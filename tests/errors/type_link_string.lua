-- expect: tests/errors/type_link_string.lua:4: ps.cluster: field 'link' must be a table { bandwidth = ..., latency = ... }, got '50 GB/s'
local ps = require "pipesim"

ps.cluster{ ranks = 2, link = "50 GB/s" }
