-- The scenario the canned queries (results/queries/*.sql) are checked on:
-- small enough that every expected row in tests/queries/*.expected can be
-- worked out by hand, deterministic (no sizes from timing, no randomness).
--
-- Two ranks, 1 TFLOP/s at efficiency 1, four identical layers of 1 TFLOP:
-- 2 layers per stage, so forward 2 s and backward 4 s (2x forward) per
-- microbatch and stage. With free communication GPipe and 1F1B both take
-- (m + p - 1)(f + b) = (4 + 1) * 6 = 30 s, bubble (p-1)/(m+p-1) = 20%.
-- Memory: 1 GiB of activations per layer and microbatch, so 2 GiB per
-- microbatch on a stage; GPipe holds all m = 4 (8 GiB, rank 0 at the 4th
-- forward's start, t = 6 s), 1F1B holds p - s (4 GiB on rank 0, 2 GiB on
-- rank 1). Static: 2 layers x 1e6 parameters x 16 B = 0.030 GiB.
-- Links (dp/1f1b): 4 activations and 4 gradients of 1 MB each way between
-- the stages, each 1 ms latency + 1 ms data: busy 8 ms, rate 50% while busy.
local ps = require "pipesim"

local free = ps.cluster{
    name = "2 free", ranks = 2,
    device = { flops = "1 TFLOPS", efficiency = 1, memory = "80 GiB" },
}
local linked = ps.cluster{
    name = "4 mesh", ranks = 4,
    device = { flops = "1 TFLOPS", efficiency = 1, memory = "80 GiB" },
    link = { bandwidth = "1 GB/s", latency = "1 ms" },
}

local layers = {}
for i = 1, 4 do
    layers[i] = { name = "l" .. i, fwd_flops = "1 TFLOP", params = 1e6,
                    act_bytes = "1 GiB", out_bytes = "1 MB" }
end

for _, s in ipairs{ "gpipe", "1f1b" } do
    ps.run{ name = "pp/" .. s, cluster = free, layers = layers, stages = 2,
              microbatches = 4, schedule = s, record = "events" }
end
-- a link: transfers and link rows; data parallelism: exposed gradient sync
-- (each bucket's ring Simple allreduce includes NCCL's fixed latency,
-- 45.56 us on 2 ranks: tests/lua/test_dp.lua derives it; asked for with
-- protocol = "auto", since textbook links take none by default)
ps.run{ name = "dp/1f1b", cluster = linked, layers = layers, stages = 2,
          microbatches = 4, schedule = "1f1b", dp = 2, record = "events",
          grad_sync = { protocol = "auto" } }
-- ring vs binomial_tree allreduce on the 4-rank mesh: binomial_tree (log2 4 = 2 steps each
-- way of the whole array) wins at 1 KiB, ring (2 (N - 1) steps of 1/N of
-- it) from 16 MiB
for _, b in ipairs{ 1024, 16 * 1024 * 1024 } do
    for _, a in ipairs{ "ring", "binomial_tree" } do
        ps.collective{ cluster = linked, op = "allreduce", algorithm = a,
                         bytes = b, name = "ar/" .. a, record = "summary" }
    end
end
