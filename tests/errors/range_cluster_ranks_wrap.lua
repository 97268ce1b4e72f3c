-- expect: tests/errors/range_cluster_ranks_wrap.lua:4: ps.cluster: field 'ranks' must be an integer in 1..1048576, got 4294967298
local ps = require "pipesim"

ps.cluster{ ranks = (1 << 32) + 2 }
