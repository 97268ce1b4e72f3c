-- expect: tests/errors/schedule_csv_bad_action.lua:4: tests/errors/data/schedule_bad_action.csv:2: cell 4: bad action '1X1' (expected <stage><F|I|B|W><microbatch> such as 0F0 or 1I0, a comm action or an empty cell)
local ps = require "pipesim"
-- row 2 (pipeline rank 1), fourth cell: X is no action type
local order = ps.schedule.load_pytorch("tests/errors/data/schedule_bad_action.csv")
ps.run{ layers = { { fwd_time = 1 }, { fwd_time = 1 } }, stages = 2, microbatches = 2, schedule = order }
