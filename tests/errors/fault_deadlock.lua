-- expect: tests/errors/fault_deadlock.lua:5: ps.run: deadlock at t=0.006 s (rank 3 stalled at 5 ms): 
local ps = require "pipesim"
local l = {}
for i = 1, 4 do l[i] = { fwd_time = "1 ms" } end
ps.run{ layers = l, stages = 4, microbatches = 8, faults = { { rank = 3, stall = "at 5 ms" } } }
