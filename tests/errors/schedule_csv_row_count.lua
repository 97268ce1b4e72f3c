-- expect: tests/errors/schedule_csv_row_count.lua:4: tests/errors/data/schedule_three_rows.csv: 3 rows but 2 pipeline ranks (stages)
local ps = require "pipesim"
-- one row per pipeline rank: three rows for a two-stage run
local order = ps.schedule.load_pytorch("tests/errors/data/schedule_three_rows.csv", { stages = 2 })
ps.run{ layers = { { fwd_time = 1 }, { fwd_time = 1 } }, stages = 2, microbatches = 1, schedule = order }
