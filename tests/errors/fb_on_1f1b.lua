-- expect: tests/errors/fb_on_1f1b.lua:4: ps.run: overlap_fb / fb_interference: the 1f1b schedule has no overlapped FB actions to time (dualpipev and custom lists with FB have)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 4, schedule = "1f1b", overlap_fb = "3 ms" }
