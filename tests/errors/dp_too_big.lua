-- expect: tests/errors/dp_too_big.lua:5: ps.run: dp 4 x 2 stages need 8 ranks but the cluster has 4
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4 }
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ cluster = c, layers = layers, stages = 2, microbatches = 2, dp = 4 }
