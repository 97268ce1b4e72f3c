-- expect: tests/errors/fault_deadline.lua:8: ps.run: deadline at t=11.750 ms: rank 4 waited 10 ms on recv F3 from rank 3 (microbatch 3); rank 3 stalled at 1.75 ms
local ps = require "pipesim"
-- 8 stages of 0.25 ms forward (1F1B): rank 3 runs its warm-up F0..F3 and
-- finishes F3 at 7 x 0.25 = 1.75 ms, when it stalls before sending it;
-- rank 4 posts recv F3 at 1.75 ms (after sending its F2) and waits
local l = {}
for i = 1, 8 do l[i] = { fwd_time = "0.25 ms" } end
ps.run{ layers = l, stages = 8, microbatches = 8, recv_timeout = "10 ms",
    faults = { { rank = 3, stall = "at 1.75 ms" } } }
