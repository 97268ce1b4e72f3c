-- expect: tests/errors/type_candidates_entry.lua:5: ps.collective: field 'candidates': entries must be names
local ps = require "pipesim"

local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s" } }
ps.collective{ cluster = c, op = "allreduce", bytes = "1 MB", candidates = { "ring", 3 } }
