-- Issue 27 item 15: a time that underflows to 0 is not accepted as 0.
-- expect: time_underflow.lua:4: ps.run: field 'layers[2].fwd_time': '1e-400 s' is too small to represent (below 2.22507e-308 it underflows to 0): write 0 for none
local ps = require "pipesim"
ps.run{ layers = { { fwd_time = 1 }, { fwd_time = "1e-400 s" } }, stages = 2, microbatches = 2 }
