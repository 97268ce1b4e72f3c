-- expect: tests/errors/show_width_max.lua:6: ps.show: width must be an integer in 20..10000, got 10001
-- the bound `pipesim report --width` has too (tests/cli_limits.sh)
local ps = require "pipesim"

local r = ps.run{ layers = { { fwd_time = 1 } }, stages = 1, microbatches = 1 }
ps.show(r, 10001)
