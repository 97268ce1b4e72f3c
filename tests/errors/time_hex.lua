-- Issue 27 item 15: C's hexadecimal floats are not times.
-- expect: time_hex.lua:4: ps.run: field 'layers[1].fwd_time': '0x10 s' is not a decimal number (hexadecimal numbers are not read: write e.g. "5 us")
local ps = require "pipesim"
ps.run{ layers = { { fwd_time = "0x10 s" }, { fwd_time = 1 } }, stages = 2, microbatches = 2 }
