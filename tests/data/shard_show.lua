-- A plain run shown with ps.show, then a sweep: one script for every shard
-- (tests/cli_sweep.sh). Shard 0 records and shows the plain run; the others
-- simulate it without recording, and their ps.show prints nothing.
local ps = require "pipesim"
local c = ps.cluster{ ranks = 2, device = { flops = "100 TFLOPS" }, link = { bandwidth = "50 GB/s", latency = "5 us" } }
local L = {} for i = 1, 4 do L[i] = { fwd_flops = "1 TFLOP", out_bytes = "1 MiB" } end
local base = ps.run{ cluster = c, layers = L, stages = 2, microbatches = 4, name = "base" }
ps.show(base)
local rs = ps.sweep{ name = "m", space = { m = { 2, 4, 8, 16 } }, run = function(p)
  return { cluster = c, layers = L, stages = 2, microbatches = p.m } end }
print(#rs)
