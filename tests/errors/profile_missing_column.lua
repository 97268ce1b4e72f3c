-- expect: tests/errors/profile_missing_column.lua:4: tests/errors/data/missing_column.csv:1: missing column 'bwd_ms'
local ps = require "pipesim"
-- the CSV has fwd_ms but no backward time column
local layers = ps.profile.load("tests/errors/data/missing_column.csv")
ps.run{ layers = layers, stages = 2, microbatches = 4 }
