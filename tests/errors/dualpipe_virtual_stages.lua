-- expect: tests/errors/dualpipe_virtual_stages.lua:4: ps.run: dualpipe schedule holds each of the 2 stages twice (two copies, not model chunks): leave virtual_stages at 1 (got 2)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, virtual_stages = 2, microbatches = 4, schedule = "dualpipe" }
