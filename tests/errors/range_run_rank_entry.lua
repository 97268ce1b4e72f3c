-- expect: tests/errors/range_run_rank_entry.lua:6: ps.run: field 'ranks[2]' must be an integer in 0..3, got 4294967297
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

local c = ps.cluster{ ranks = 4 }
ps.run{ cluster = c, layers = layers, stages = 2, microbatches = 2, ranks = { 0, (1 << 32) + 1 } }
