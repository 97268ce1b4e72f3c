-- expect: tests/errors/recv_timeout_zero.lua:4: ps.run: field 'recv_timeout' must be positive, got 0
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2, recv_timeout = 0 }
