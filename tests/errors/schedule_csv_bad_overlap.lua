-- expect: tests/errors/schedule_csv_bad_overlap.lua:4: tests/errors/data/schedule_bad_overlap.csv:1: cell 2: bad action '(0B0;0F1)OVERLAP_F_B' (OVERLAP_F_B holds a forward, then a backward, as in (0F3;3B1)OVERLAP_F_B)
local ps = require "pipesim"
-- the overlapped cell names its backward first
local order = ps.schedule.load_pytorch("tests/errors/data/schedule_bad_overlap.csv")
ps.run{ layers = { { fwd_time = 1 } }, stages = 1, microbatches = 2, schedule = order }
