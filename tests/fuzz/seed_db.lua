-- The database fuzz_db starts from (tests/fuzz/run.sh makes it at fuzz
-- time, so it always has the current schema): a recorded pipeline, a
-- summary-level one and a collective, on two ranks.
local ps = require "pipesim"
local c = ps.cluster{ ranks = 2, link = { bandwidth = "10 GB/s", latency = "5 us" },
    device = { flops = "100 TFLOPS", memory = "1 GiB" } }
local l = { { fwd_time = "1 ms", act_bytes = "1 MiB", out_bytes = "64 KiB" },
              { fwd_time = "2 ms", act_bytes = "1 MiB", out_bytes = "64 KiB" } }
ps.run{ name = "1f1b", cluster = c, layers = l, stages = 2, microbatches = 2 }
ps.run{ name = "gpipe", cluster = c, layers = l, stages = 2, microbatches = 2, schedule = "gpipe", record = "summary" }
ps.collective{ cluster = c, op = "allreduce", bytes = 64, algorithm = "ring" }
