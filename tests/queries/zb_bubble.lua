-- The scenario results/queries/zb_bubble.sql is checked on: two stages,
-- four microbatches, F = B_input = W = 1 s, free links. 1F1B (W inside
-- the backward): makespan (m+p-1)(F+B+W) = 15 s, rank 0 spans all of it
-- and is busy m(F+B+W) = 12 s: 3/15 = 20.00 %. ZB-H2: makespan m(F+B+W)
-- + (p-1)F = 13 s, but each rank runs its 12 s without a gap (rank 0 from
-- 0 to 12, rank 1 from 1 to 13): the paper's rate, from the longest
-- span, is 0.00 %.
local ps = require "pipesim"

local cluster = ps.cluster { ranks = 2, device = { flops = 1e12, memory = "80 GiB" } }
local layers = {}
for i = 1, 2 do
    layers[i] = { fwd_time = 1, bwd_input_time = 1, bwd_weight_time = 1, params = 1,
        act_bytes = 1, out_bytes = 1 }
end
for _, s in ipairs { "1f1b", "zb_h2" } do
    ps.run { name = s, cluster = cluster, layers = layers, stages = 2, microbatches = 4,
        schedule = s, optimizer_time = 0, record = "events" }
end
