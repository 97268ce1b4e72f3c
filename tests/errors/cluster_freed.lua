-- expect: tests/errors/cluster_freed.lua:10: ps.run: cluster was freed
-- A cluster whose __gc was called by hand must not be used afterwards
-- (it segfaulted); the C methods check for it.
local ps = require "pipesim"
local c = ps.cluster{ ranks = 2, link = { bandwidth = "10 GB/s" } }
getmetatable(c).__gc(c)
getmetatable(c).__gc(c) -- twice is harmless
assert(tostring(c) == "pipesim.cluster(freed)")
assert(not pcall(function() return c.ranks end))
ps.run{ cluster = c, layers = { { fwd_time = 1 }, { fwd_time = 1 } },
        stages = 2, microbatches = 2 }
