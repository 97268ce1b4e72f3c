-- make bench (issue 12): one ring all-reduce of 1 GiB on a 50 GB/s, 5 us
-- mesh (every pair its own link), the pipesim side of the SimGrid
-- comparison (tests/bench/simgrid_bench.cpp ring). -D ranks=N (1024),
-- -D record=summary|events.
--   build/pipesim run tests/bench/ring.lua -o /tmp/ring.db
local ps = require "pipesim"
local n = ps.args.ranks or 1024
ps.progress(false)
local c = ps.cluster{ ranks = n, link = { bandwidth = "50 GB/s", latency = "5 us" } }
local r = ps.collective{ cluster = c, op = "allreduce", algorithm = "ring", bytes = "1 GiB",
    record = ps.args.record or "summary", name = "ring" }
print(string.format("pipesim ring allreduce %d ranks: simulated %.9f s", n, r.time))
