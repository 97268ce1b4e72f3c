-- expect: tests/errors/faults_not_list.lua:4: ps.run: field 'faults' must be a list of faults such as { { rank = 3, stall = "at 2 ms" } }, got 'rank 1 stalls'
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2,
    faults = "rank 1 stalls" }
