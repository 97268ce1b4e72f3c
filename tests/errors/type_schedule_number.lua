-- expect: tests/errors/type_schedule_number.lua:5: ps.run: field 'schedule' must be a schedule name or a list of actions per stage, got 1
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, schedule = 1 }
