-- make bench, streaming engine (issue 12): one workload per process, timed
-- whole by tests/bench/whole_process.sh.
--   -D w=ring -D n=1024 -D record=summary   ring allreduce of 1 GiB, 50 GB/s 5 us mesh
--   -D w=pipe -D p=64 -D m=1024 [-D s=interleaved -D v=4]   uniform stages, 1 ms / 2 ms
-- Prints the simulated time, so runs can be checked against closed forms.
local ps = require "pipesim"
local a = ps.args
local link = { bandwidth = "50 GB/s", latency = "5 us" }
if (a.w or "ring") == "ring" then
    local n = a.n or 1024
    local c = ps.cluster{ ranks = n, link = link }
    local r = ps.collective{ cluster = c, op = "allreduce", algorithm = "ring",
                               bytes = "1 GiB", record = a.record or "summary" }
    print(("ring %d ranks: %.9f s simulated, %d transfers"):format(n, r.time, r.transfers))
else
    local p, m, v = a.p or 64, a.m or 1024, a.v or 1
    local c = ps.cluster{ ranks = p, link = link }
    local layers = {}
    for i = 1, p * v do
        layers[i] = { fwd_time = "1 ms", bwd_time = "2 ms", act_bytes = "1 MB", out_bytes = "1 MB" }
    end
    local r = ps.run{ cluster = c, layers = layers, stages = p, microbatches = m,
                        schedule = a.s or "1f1b", virtual_stages = v, record = a.record or "summary" }
    print(("%s p=%d v=%d m=%d: %.9f s simulated, bubble %.4f"):format(a.s or "1f1b", p, v, m,
        r.makespan, r.bubble))
end
