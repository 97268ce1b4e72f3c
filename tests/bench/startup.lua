-- make bench (issue 12, the fixed cost of a process): one 2-rank, 2-layer
-- step with summary recording, so that a whole `pipesim run` is nearly all
-- startup: the Lua library, the database, the summary line.
--   build/pipesim run tests/bench/startup.lua -o /tmp/startup.db
local ps = require "pipesim"
ps.progress(false)
local c = ps.cluster{ ranks = 2, device = { flops = "1 PFLOPS" },
    link = { bandwidth = "50 GB/s", latency = "5 us" } }
ps.run{ name = "startup", cluster = c, stages = 2, microbatches = 2, record = "summary",
    layers = { { fwd_time = "1 ms", bwd_time = "2 ms" }, { fwd_time = "1 ms", bwd_time = "2 ms" } } }
