-- expect: tests/errors/type_show_width.lua:5: ps.show: width must be an integer in 20..10000, got 80.5
local ps = require "pipesim"

local r = ps.run{ layers = { { fwd_time = 1 } }, stages = 1, microbatches = 1 }
ps.show(r, 80.5)
