-- expect: tests/errors/type_cluster_ranks_string.lua:4: ps.cluster: field 'ranks' must be an integer in 1..1048576, got '4'
local ps = require "pipesim"

ps.cluster{ ranks = "4" }
