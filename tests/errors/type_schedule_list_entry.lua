-- expect: tests/errors/type_schedule_list_entry.lua:5: ps.run: field 'schedule': rank 1 action 2 is not a string
local ps = require "pipesim"

local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 1,
    schedule = { { "F0", "B0" }, { "F0", 7 } } }
