-- expect: tests/errors/list_sparse_schedule.lua:5: ps.run: field 'schedule[2]' must be a list without holes: schedule[2][2] is nil but schedule[2][3] is set
local ps = require "pipesim"

local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 1,
    schedule = { { "F0", "B0" }, { [1] = "F0", [3] = "B0" } } }
