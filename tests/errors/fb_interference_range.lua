-- expect: tests/errors/fb_interference_range.lua:4: ps.run: fb_interference must be in 0..1 (got 2)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, virtual_stages = 2, microbatches = 4, schedule = "dualpipev", fb_interference = 2 }
