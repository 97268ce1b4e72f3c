-- Fault injection (stall, slow, link down) and recv_timeout: makespans
-- against hand calculations, deadline and deadlock messages, exactly.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

-- uniform stages: forward 1 ms, backward 2 ms, free communication
local function layers(n) return F.layers(n, { fwd_time = "1 ms" }) end
local ms = 1e-3
local function run(spec)
    spec.layers = spec.layers or layers(spec.stages)
    spec.record = "none"
    return ps.run(spec)
end

-- slow = 0.5 on the last stage of 1F1B: it alternates F and B without ever
-- idling (its next forward has always arrived), so the step is the fill of
-- the p-1 stages before it, m forward-backward pairs at half speed (6 ms
-- each) and the backward drain through the p-1 stages:
-- (p-1)(f+b) + m(f+b)/0.5
for _, p in ipairs{ 2, 4 } do
    for _, m in ipairs{ 1, 4, 8 } do
        local base = run{ stages = p, microbatches = m }
        H.near(base.makespan, 3 * (m + p - 1) * ms)
        local r = run{ stages = p, microbatches = m, faults = { { rank = p - 1, slow = 0.5 } } }
        H.near(r.makespan, (3 * (p - 1) + 6 * m) * ms, 1e-9, "1f1b slow last stage")
        H.eq(r.closed_form_bubble, nil, "no closed-form bubble with faults")
    end
end

-- `from`: only compute ops starting at or after it are slow. The last
-- stage runs F0 3-4, B0 4-6, F1 6-7, B1 7-9 ms; from 9 ms on, the 6
-- remaining pairs take 6 ms each: 9 + 36 + 3 (drain) + ... = 51 ms. From
-- 8.5 ms the same: B1, running at 8.5, keeps its speed.
H.near(run{ stages = 4, microbatches = 8,
              faults = { { rank = 3, slow = 0.5, from = "9 ms" } } }.makespan, 51 * ms)
H.near(run{ stages = 4, microbatches = 8,
              faults = { { rank = 3, slow = 0.5, from = "8.5 ms" } } }.makespan, 51 * ms)
H.near(run{ stages = 4, microbatches = 8,
              faults = { { rank = 3, slow = 0.5, from = "at 1 s" } } }.makespan, 33 * ms,
         1e-9, "slow after the end changes nothing")

-- GPipe with a slow middle stage (F 2, B 4 ms): sum(F) + (m-1) max(F) +
-- sum(B) + (m-1) max(B) = 5 + 2(m-1) + 10 + 4(m-1)
for _, m in ipairs{ 1, 3, 8 } do
    H.near(run{ stages = 4, microbatches = m, schedule = "gpipe",
                  faults = { { rank = 2, slow = 0.5 } } }.makespan,
             (15 + 6 * (m - 1)) * ms, 1e-9, "gpipe slow middle stage")
end
-- slow = 0.7 (70% speed) on every stage of 1F1B: the whole step / 0.7
local all = {}
for r = 0, 3 do all[#all + 1] = { rank = r, slow = 0.7 } end
H.near(run{ stages = 4, microbatches = 8, faults = all }.makespan, 33 * ms / 0.7)

-- stall: rank 3 (last stage) runs F0 3-4 ms and B0 4-6 ms (started before
-- 5 ms: it finishes), then starts nothing. Rank 2 posts send F1 + recv B0
-- at 4 ms (after its F1, 3-4 ms) and waits: with recv_timeout = 10 ms the
-- deadline is 4 + 10 = 14 ms.
local stall = { { rank = 3, stall = "at 5 ms" } }
H.raises(function() run{ stages = 4, microbatches = 8, faults = stall, recv_timeout = "10 ms" } end,
    "ps.run: deadline at t=14.000 ms: rank 2 waited 10 ms on recv B0 from rank 3 (microbatch 0); rank 3 stalled at 5 ms")
-- without a timeout: a deadlock report naming the fault and the stalled op
local msg = H.raises(function() run{ stages = 4, microbatches = 8, faults = stall } end,
    "ps.run: deadlock at t=0.006 s (rank 3 stalled at 5 ms): ")
H.check(msg and msg:find("rank 3 stalled before send B0 to rank 2", 1, true), msg)
-- an op that would start exactly at the stall time does not start
msg = H.raises(function() run{ stages = 4, microbatches = 8, faults = { { rank = 3, stall = "at 4 ms" } } } end,
    "(rank 3 stalled at 4 ms)")
H.check(msg and msg:find("rank 3 stalled before B0;", 1, true) == nil and
          msg:find("rank 3 stalled before B0", 1, true), msg)
-- a stall after the rank's last op changes nothing
H.near(run{ stages = 4, microbatches = 8, faults = { { rank = 3, stall = 1 } } }.makespan, 33 * ms)

-- recv_timeout alone: a wait of exactly the timeout is on time, a longer
-- one is not. In a 2-stage pipeline with one microbatch rank 0 waits for
-- B0 from 1 ms (its F0 done) to 4 ms (rank 1's F0 1-2, B0 2-4 ms).
H.near(run{ stages = 2, microbatches = 1, recv_timeout = "3 ms" }.makespan, 6 * ms)
H.raises(function() run{ stages = 2, microbatches = 1, recv_timeout = "2.5 ms" } end,
    "deadline at t=3.500 ms: rank 0 waited 2.5 ms on recv B0 from rank 1 (microbatch 0)")

-- link down on a pipeline before the first transfer: lost both ways
msg = H.raises(function() run{ stages = 4, microbatches = 2,
    faults = { { link = { 2, 1 }, down = 0 } } } end, "(link 2-1 down at 0 s)")
H.check(msg and msg:find("rank 2 waits on recv F0 from rank 1 (microbatch 0, lost: the link is down)", 1, true), msg)
-- a link between two other ranks changes nothing
H.near(run{ stages = 4, microbatches = 8, faults = { { link = { 0, 2 }, down = 0 } } }.makespan, 33 * ms)

-- link down on a ring allreduce: 4 ranks, 4 MB, 1 GB/s, 10 us: each of the
-- 2(N-1) = 6 steps takes 10 us + 1 MB / 1 GB/s = 1.01 ms. Link 1-2 goes
-- down at 2.5 ms, inside step 2 (2.02-3.03 ms): step 2's transfer from 1 to
-- 2 is lost, so rank 2, which posted its receive at 2.02 ms, hits a 5 ms
-- deadline at 7.02 ms (so does rank 1's send: a waiting receive is named
-- first).
local c = ps.cluster{ ranks = 4, link = { bandwidth = "1 GB/s", latency = "10 us" } }
local coll = { cluster = c, op = "allreduce", algorithm = "ring", bytes = "4 MB", record = "none" }
H.near(ps.collective(coll).time, 6 * 1.01 * ms)
coll.faults = { { link = { 1, 2 }, down = "at 2.5 ms" } }
coll.recv_timeout = "5 ms"
H.raises(function() ps.collective(coll) end,
    "ps.collective: deadline at t=7.020 ms: rank 2 waited 5 ms on recv collective from rank 1 (step 2, lost: the link is down); link 1-2 down at 2.5 ms")
-- without the timeout: the deadlock report names the lost step
coll.recv_timeout = nil
msg = H.raises(function() ps.collective(coll) end, "(link 1-2 down at 2.5 ms): ")
H.check(msg and msg:find("rank 2 waits on recv collective from rank 1 (step 2, lost: the link is down)", 1, true), msg)
-- a stalled rank in a collective: rank 3 starts nothing from 1.5 ms on, so
-- rank 0, which receives from it in every step, waits from 2.02 ms (its
-- step 2) and hits the 1.5 ms deadline at 3.52 ms
coll.faults = { { rank = 3, stall = "at 1.5 ms" } }
coll.recv_timeout = "1.5 ms"
H.raises(function() ps.collective(coll) end,
    "ps.collective: deadline at t=3.520 ms: rank 0 waited 1.5 ms on recv collective from rank 3 (step 2); rank 3 stalled at 1.5 ms")

-- a recorded run with a slow rank: rank 1 at half speed (f 2, b 4 ms) under
-- 1F1B, p = 2, m = 2: rank 1 runs F0 [1, 3], B0 [3, 7], F1 [7, 9], B1
-- [9, 13]; rank 0 ends with B1 [13, 15] (9 = 3(m + p - 1) at full speed)
local r = ps.run{ layers = layers(2), stages = 2, microbatches = 2, record = "summary",
                    faults = { { rank = 1, slow = 0.5 } } }
H.near(r.makespan, 15e-3, 1e-12, "a slowed rank, recorded")
H.eq(math.type(r.id), "integer", "recorded with an id")

H.done()
