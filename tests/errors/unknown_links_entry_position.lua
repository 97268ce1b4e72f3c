-- expect: tests/errors/unknown_links_entry_position.lua:5: ps.cluster: links[2]: unknown field [3]
local ps = require "pipesim"

-- a third positional entry is not the bandwidth: it must be named
ps.cluster{ ranks = 2, links = { { 0, 1, bandwidth = "50 GB/s" }, { 1, 0, "50 GB/s" } } }
