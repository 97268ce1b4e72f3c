-- make bench (issue 12): one training step of uniform stages (F 1 ms, B 2
-- ms, 1 MB activations on a 50 GB/s, 5 us mesh, rendezvous), the pipesim
-- side of the SimGrid comparison (tests/bench/simgrid_bench.cpp 1f1b).
-- -D p=P (64), -D m=M (1024), -D v=V (1: 1f1b; more: interleaved),
-- -D record=summary|events.
--   build/pipesim run tests/bench/pipe_1f1b.lua -o /tmp/pipe.db
local ps = require "pipesim"
local p, m, v = ps.args.p or 64, ps.args.m or 1024, ps.args.v or 1
ps.progress(false)
local c = ps.cluster{ ranks = p, device = { flops = "1 PFLOPS" },
    link = { bandwidth = "50 GB/s", latency = "5 us" } }
local layers = {}
for i = 1, p * v do
    layers[i] = { fwd_time = "1 ms", bwd_time = "2 ms", params = 1e6, act_bytes = 1e8,
        out_bytes = "1 MB" }
end
local r = ps.run{ name = "1f1b", cluster = c, layers = layers, stages = p, microbatches = m,
    schedule = v > 1 and "interleaved" or "1f1b", virtual_stages = v,
    record = ps.args.record or "summary" }
print(string.format("pipesim %s p=%d m=%d: simulated %.9f s", r.schedule or "1f1b", p, m,
    r.makespan))
