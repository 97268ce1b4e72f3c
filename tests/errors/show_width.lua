-- expect: tests/errors/show_width.lua:6: ps.show: width must be an integer in 20..10000, got 1099511627776
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

local r = ps.run{ layers = layers, stages = 2, microbatches = 2 }
ps.show(r, 1 << 40)
