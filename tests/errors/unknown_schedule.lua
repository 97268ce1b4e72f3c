-- expect: tests/errors/unknown_schedule.lua:4: ps.run: field 'schedule': unknown schedule 'zigzag'
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 4, schedule = "zigzag" }
