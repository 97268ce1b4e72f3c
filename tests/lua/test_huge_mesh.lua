-- Meshes as large as the rank limit: the network kept an N*N link table
-- indexed in int32, so a 65536-rank mesh segfaulted; now a run pays only
-- for the pairs it uses. Times match the same runs on a two-rank mesh.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"

local link = { bandwidth = "25 GB/s", latency = "5 us" }
local small = ps.cluster{ ranks = 2, link = link }

for _, n in ipairs{ 65536, 1 << 20 } do
    local big = ps.cluster{ ranks = n, link = link }
    H.eq(big.ranks, n)
    -- ring allreduce between the first and the last rank: 2 (a + T / (2 b))
    local r = ps.collective{ cluster = big, op = "allreduce", bytes = "1 MiB",
                               algorithm = "ring", ranks = { 0, n - 1 }, record = "none" }
    local want = 2 * (5e-6 + 1048576 / (2 * 25e9))
    H.near(r.time, want, 1e-9)
    local s = ps.collective{ cluster = small, op = "allreduce", bytes = "1 MiB",
                               algorithm = "ring", record = "none" }
    H.near(r.time, s.time, 1e-12)
end

-- a pipeline placed on the two ends of a 65536-rank mesh, recorded with
-- its link rows
local big = ps.cluster{ ranks = 65536, link = link }
local layers = {}
for i = 1, 4 do layers[i] = { fwd_time = "1 ms", out_bytes = "16 MiB" } end
local a = ps.run{ cluster = big, ranks = { 65535, 0 }, layers = layers,
                    stages = 2, microbatches = 4 }
local b = ps.run{ cluster = small, ranks = { 1, 0 }, layers = layers,
                    stages = 2, microbatches = 4 }
H.near(a.makespan, b.makespan, 1e-12)
-- 1F1B on 2 stages of 2 layers (f 2 ms, b 4 ms) and m = 4:
-- 6 ms (m + p - 1) plus the 16 MiB hops, so the figure is not 0 on both
H.check(a.makespan > 6e-3 * (4 + 2 - 1), "compute and transfers: " .. a.makespan)

H.done()
