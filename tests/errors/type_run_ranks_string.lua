-- expect: tests/errors/type_run_ranks_string.lua:6: ps.run: field 'ranks' must be a table of cluster ranks such as { 0, 1, 2, 3 }, got '0,1'
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

local c = ps.cluster{ ranks = 4 }
ps.run{ cluster = c, layers = layers, stages = 2, microbatches = 2, ranks = "0,1" }
