-- expect: tests/errors/profile_not_a_number.lua:4: tests/errors/data/non_numeric.csv:4: column 'fwd_ms' is not a number: '2.0O'
local ps = require "pipesim"
-- line 4 of the CSV (after a comment and the header) has a letter O for a 0
local layers = ps.profile.load("tests/errors/data/non_numeric.csv")
ps.run{ layers = layers, stages = 2, microbatches = 4 }
