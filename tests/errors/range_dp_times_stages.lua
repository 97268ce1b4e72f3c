-- expect: tests/errors/range_dp_times_stages.lua:5: ps.run: dp 1048576 x 2 stages is 2097152 ranks, more than the limit of 1048576
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, dp = 1 << 20 }
