-- expect: tests/errors/unknown_collective_field.lua:5: ps.collective: unknown field 'algoritm' (did you mean 'algorithm'?)
local ps = require "pipesim"

local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s" } }
ps.collective{ cluster = c, op = "allreduce", algoritm = "ring", bytes = "1 MB" }
