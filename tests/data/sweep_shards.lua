-- A sweep of -D points=N (default 128) small summary runs, one run outside
-- it before and after, for tests/cli_merge.sh and `make stress`: sharded
-- 64 and 1,000 ways and merged (issue 27 items 5 and 6).
local ps = require "pipesim"
local l = { { fwd_time = 1e-3 }, { fwd_time = 2e-3 } }
ps.run{ layers = l, stages = 2, microbatches = 1, record = "summary", name = "before" }
local pts = {}
for i = 1, ps.args.points or 128 do pts[i] = { microbatches = i } end
ps.sweep{ name = "shards", points = pts, base = { layers = l, stages = 2, record = "summary" } }
ps.run{ layers = l, stages = 2, microbatches = 2, record = "summary", name = "after" }
