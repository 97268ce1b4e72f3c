-- faults: what a straggler costs a pipeline, and what a hung rank looks
-- like with and without a receive timeout.
--
-- An 8-stage 1F1B pipeline of a GPT-like model (uniform stages, 8 ms
-- forward and 16 ms backward per microbatch, 64 MB activations over 50
-- GB/s) on one DGX-like node. It prints the step time when one rank runs
-- at 90%, 70% and 50% speed (a thermally throttled or shared GPU), on the
-- first and on the last stage; then rank 3 hangs at 100 ms, first with
-- recv_timeout = "1 s" (a deadline error naming who waits on whom), then
-- without one (the deadlock report); both are recorded as failed runs:
--   sqlite3 results/faults.db "SELECT id, name, status, error FROM run"
-- Then a ring allreduce whose link 2-3 fails half way. `-D quick=1` (CI)
-- runs fewer microbatches.
local ps = require "pipesim"

local m = ps.args.quick and 16 or 64
local p = 8
local layers = {}
for i = 1, p do
    layers[i] = { fwd_time = "8 ms", bwd_time = "16 ms", out_bytes = "64 MB" }
end
local node = ps.cluster{ ranks = p, link = { bandwidth = "50 GB/s", latency = "2 us" } }
local function step(name, faults, extra)
    local spec = { cluster = node, layers = layers, stages = p, microbatches = m,
                     name = name, record = "summary", faults = faults }
    for k, v in pairs(extra or {}) do spec[k] = v end
    return ps.run(spec)
end

local base = step("healthy")
print(string.format("%d stages, %d microbatches: healthy step %s", p, m,
                      ps.seconds(base.makespan)))
print("straggler   first stage       last stage")
for _, speed in ipairs{ 0.9, 0.7, 0.5 } do
    local first = step(string.format("rank 0 at %d%%", speed * 100),
                         { { rank = 0, slow = speed } })
    local last = step(string.format("rank %d at %d%%", p - 1, speed * 100),
                        { { rank = p - 1, slow = speed } })
    print(string.format("  %3d%%    %s (+%4.1f%%)   %s (+%4.1f%%)", speed * 100,
        ps.seconds(first.makespan), 100 * (first.makespan / base.makespan - 1),
        ps.seconds(last.makespan), 100 * (last.makespan / base.makespan - 1)))
end
-- a slow rank paces the whole pipeline: 1F1B's steady state runs at the
-- slowest stage's f + b, so the step grows by up to m (f + b)(1/s - 1)
-- (exactly that for the last stage when communication is free, as
-- tests/lua/test_faults.lua checks; here part of the transfers hides
-- behind the slow rank's compute)

local hang = { { rank = 3, stall = "at 100 ms" } }
local _, err = pcall(step, "rank 3 hangs, timeout", hang, { recv_timeout = "1 s" })
print("\nrank 3 hangs at 100 ms, recv_timeout = 1 s:\n  " .. tostring(err))
_, err = pcall(step, "rank 3 hangs", hang)
print("without a timeout:\n  " .. tostring(err):sub(1, 200) .. " ...")

local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
local spec = { cluster = c, op = "allreduce", algorithm = "ring", bytes = "256 MB",
                 name = "ring", record = "summary" }
local ring = ps.collective(spec)
spec.name = "ring, link 2-3 down"
spec.faults = { { link = { 2, 3 }, down = ring.time / 2 } }
spec.recv_timeout = "100 ms"
_, err = pcall(ps.collective, spec)
print(string.format("\nring allreduce of 256 MB on 4 ranks: %s; link 2-3 down at %s:\n  %s",
    ps.seconds(ring.time), ps.seconds(ring.time / 2), tostring(err)))
