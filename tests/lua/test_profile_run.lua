-- A profiled run uses the measured times of the CSV, not FLOPs: its
-- makespan equals closed forms computed from the CSV's own numbers
-- (scenarios/data/llama-8b-a100.csv). Communication is free (no link), so
-- only compute counts. Runs under `pipesim run` (needs the core).
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local CSV = "scenarios/data/llama-8b-a100.csv"
local layers = ps.profile.load(CSV)
H.eq(#layers, 34, "embedding, 32 blocks, head")

-- The CSV's times, read independently of ps.profile (milliseconds).
local rows = {}
for line in io.lines(CSV) do
    if not line:match("^#") and not line:match("^name,") then
        local name, f, b = line:match("^([^,]+),([^,]+),([^,]+),")
        rows[#rows + 1] = { name = name, f = tonumber(f) * 1e-3, b = tonumber(b) * 1e-3 }
    end
end
H.eq(#rows, #layers, "rows read back")
for i, r in ipairs(rows) do
    H.near(layers[i].fwd_time, r.f, 1e-12, r.name .. " fwd")
    H.near(layers[i].bwd_time, r.b, 1e-12, r.name .. " bwd")
end

-- per-stage forward and backward sums of a partition, from the CSV rows
local function stage_times(counts, first)
    local f, b, at = {}, {}, first or 0
    for s, c in ipairs(counts) do
        f[s], b[s] = 0, 0
        for i = at + 1, at + c do f[s], b[s] = f[s] + rows[i].f, b[s] + rows[i].b end
        at = at + c
    end
    return f, b
end
local sum, max = F.sum, F.max

-- 1. One stage: m times the whole model's forward + backward.
local m = 8
local r = ps.run{ layers = layers, stages = 1, microbatches = m, schedule = "1f1b",
                  record = "none" }
local f, b = stage_times({ #rows })
H.near(r.makespan, m * (f[1] + b[1]), 1e-9, "p = 1: m * sum(fwd + bwd)")

-- 2. GPipe on 4 uneven stages, eager p2p: the forward phase is a flow shop
-- of identical jobs, sum_s f_s + (m-1) max_s f_s; the backward phase starts
-- when the last stage has done its last forward and is the same in reverse.
local counts = ps.partition.resolve("time", layers, 4)
f, b = stage_times(counts)
r = ps.run{ layers = layers, stages = 4, microbatches = m, schedule = "gpipe",
            partition = "time", p2p = "eager", record = "none" }
H.near(r.makespan, sum(f) + (m - 1) * max(f) + sum(b) + (m - 1) * max(b), 1e-9,
    "gpipe, partition 'time' " .. H.show(counts))
local fb = {}
for s = 1, #f do fb[s] = f[s] + b[s] end
H.near(r.imbalance, max(fb) / (sum(fb) / 4), 1e-9, "imbalance from the CSV times")

-- 3. 1F1B on the 32 identical blocks, 4 stages of 8: uniform stages, so the
-- DESIGN closed forms hold with the CSV's block times: makespan
-- (m + p - 1)(f + b), bubble (p - 1)/(m + p - 1).
local blocks = table.move(layers, 2, 33, 1, {})
f, b = stage_times({ 8, 8, 8, 8 }, 1)
for _, p2p in ipairs { "rendezvous", "eager" } do
    for _, mb in ipairs { 1, 4, 8, 64 } do
        r = ps.run{ layers = blocks, stages = 4, microbatches = mb, schedule = "1f1b",
                    p2p = p2p, record = "none" }
        H.near(r.makespan, (mb + 3) * (f[1] + b[1]), 1e-9,
            string.format("1f1b %s m=%d makespan", p2p, mb))
        H.near(r.bubble, 3 / (mb + 3), 1e-9, string.format("1f1b %s m=%d bubble", p2p, mb))
    end
end

-- 4. The FLOPs of a layer are ignored when it has a measured time: adding
-- absurd FLOPs to the profiled layers changes nothing, even on a device.
local cluster = ps.cluster{ ranks = 4, device = { flops = "1 TFLOPS" } }
local heavy = {}
for i, l in ipairs(layers) do
    local c = {}
    for k, v in pairs(l) do c[k] = v end
    c.fwd_flops = 1e18
    heavy[i] = c
end
local a = ps.run{ layers = layers, stages = 4, microbatches = m, record = "none" }
local z = ps.run{ layers = heavy, stages = 4, microbatches = m, cluster = cluster,
                  record = "none" }
H.near(z.makespan, a.makespan, 1e-12, "measured times win over FLOPs")

H.done()
