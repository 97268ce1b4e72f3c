-- expect: tests/errors/unknown_profile_column.lua:5: tests/errors/data/typo_column.csv:1: unknown column 'bwd_mss' (did you mean 'bwd_ms'?)
local ps = require "pipesim"

-- the header says bwd_mss
ps.profile.load("tests/errors/data/typo_column.csv")
