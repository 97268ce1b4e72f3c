-- Issue 27 item 15: a forward of 1e308 s makes a backward (2 x) of inf s;
-- the message names the fields it comes from.
-- expect: fwd_time_overflow.lua:5: ps.run: stage 0: its backward time is inf, not a finite number >= 0 (the sum of its layers' bwd_time, or 2 x fwd_time where bwd_time is not given)
local ps = require "pipesim"
ps.run{ layers = { { fwd_time = 1e308 }, { fwd_time = 1 } }, stages = 2, microbatches = 2 }
