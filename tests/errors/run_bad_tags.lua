-- expect: tests/errors/run_bad_tags.lua:4: ps.run: field 'tags.gbs' must be a string, number or boolean, got a table
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 2, tags = { gbs = { 1024 } } }
