-- Live mode (backend = "tcp", core/live/): the programs of the simulator
-- run on one process per rank over loopback TCP. Collectives: the exact
-- integer inputs of test_collective.lua's data mode through every op and
-- algorithm, outputs equal to data mode's and to the sums, bytes counted
-- at the socket, the simulated twin; pipelines: every schedule's gradient
-- against the full-batch gradient (float64), with and without recompute;
-- faults (stall + recv_timeout), the real deadlock, and the messages of
-- bad input. Each run is small: the suite runs on 2 shared cores and
-- under ASan.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"
local live_mod = require "pipesim.live"

local c4 = F.mesh(4, 1e9, 20e-6)

local function live_coll(op, algo, bytes, extra)
    return ps.collective(F.with({ cluster = c4, op = op, algorithm = algo, bytes = bytes,
                                  backend = "tcp", iterations = 1, warmup = 0,
                                  record = "none" }, extra))
end

-- the reference data of test_collective.lua: exact sums in float32
local function f(rank, i) return (rank + 1) * 1000 + i % 7 end

local ALGOS = {
    allreduce = { "ring", "binomial_tree", "double_binary_tree", "halving_doubling", "direct" },
    reduce_scatter = { "ring", "halving_doubling", "direct" },
    allgather = { "ring", "halving_doubling", "direct" },
    broadcast = { "binomial_tree", "pipeline", "scatter_allgather" },
    reduce = { "binomial_tree" },
    alltoall = { "direct", "pairwise" },
}
local OPS = { "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall" }

local function seg(n, parts, i)
    local q, r = n // parts, n % parts
    return i * q + math.min(i, r), q + (i < r and 1 or 0)
end

local function expected(op, ranks, root, n, k, e)
    if op == "broadcast" then return f(root, e) end
    if op == "allgather" then
        for j = 1, #ranks do
            local lo, cnt = seg(n, #ranks, j - 1)
            if e >= lo and e < lo + cnt then return f(ranks[j], e) end
        end
    end
    if op == "alltoall" then -- block j of rank k came from rank j's block k
        local b = n // #ranks
        return f(ranks[e // b + 1], (k - 1) * b + e % b)
    end
    local s = 0
    for j = 1, #ranks do s = s + f(ranks[j], e) end
    return s
end

-- every op and algorithm over TCP: the outputs are data mode's, bit for
-- bit (coll/live.c checks), and the exact sums (checked here)
local checked = 0
local ranks = { 2, 0, 3, 1 }
for _, op in ipairs(OPS) do
    for _, algo in ipairs(ALGOS[op]) do
        local n = op == "alltoall" and 4 * 9 or 37
        local root = ranks[#ranks]
        local r = live_coll(op, algo, 4 * n, { ranks = ranks, root = root, data = f })
        local sim = ps.collective{ cluster = c4, op = op, algorithm = algo, bytes = 4 * n,
                                   ranks = ranks, root = root, data = f, record = "none" }
        H.eq(r.backend, "tcp")
        H.eq(r.simulated, sim.time, op .. " " .. algo .. ": the twin is the simulation")
        H.eq(#r.times, 1)
        H.check(r.time > 0, op .. " " .. algo .. ": a measured time")
        local ok = true
        for k = 1, #ranks do
            local lo, cnt = 0, n
            if op == "reduce_scatter" then lo, cnt = seg(n, #ranks, k - 1) end
            if op == "reduce" and ranks[k] ~= root then cnt = 0 end
            if #r.outputs[k] ~= cnt then ok = false end
            for e = lo, lo + cnt - 1 do
                if r.outputs[k][e - lo + 1] ~= expected(op, ranks, root, n, k, e) then ok = false end
                if r.outputs[k][e - lo + 1] ~= sim.outputs[k][e - lo + 1] then ok = false end
            end
            if r.bytes_sent[k] ~= sim.bytes_sent[k] then ok = false end
        end
        H.check(ok, op .. " " .. algo .. ": exact outputs and bytes over TCP")
        checked = checked + 1
    end
end
H.eq(checked, 17, "every op and algorithm ran")

-- the ring's socket counts: 2 (N - 1) / N of the array sent and received
-- by every rank, headers counted apart (16 bytes a message)
do
    local T = 4 * 4096
    local r = live_coll("allreduce", "ring", T, { iterations = 2, warmup = 1 })
    H.eq(#r.times, 2)
    for k = 1, 4 do
        H.eq(r.bytes_sent[k], 2 * 3 / 4 * T, "ring bytes sent at the socket")
        H.eq(r.bytes_received[k], 2 * 3 / 4 * T, "ring bytes received at the socket")
        H.eq(r.header_bytes[k], 2 * 16 * 2 * 3, "ring headers: 6 messages each way")
    end
    H.eq(r.verified, true)
end

-- NCCL's pipelined tree off a mesh (its default 8 slots): a send of chunk
-- c waits for the receiver's signal that chunk c - 8 has landed, a signal
-- of another rank, which live mode sends over the wire. 12 MiB on 2 GPUs
-- of a DGX has more than 8 chunks a connection; before the signals went
-- over the wire the run deadlocked.
do
    local dgx = ps.cluster(ps.clusters.dgx("H100", 1))
    local r = ps.collective{ cluster = dgx, ranks = { 0, 1 }, op = "allreduce", algorithm = "tree",
                             protocol = "none", bytes = 12 * 2 ^ 20, backend = "tcp",
                             iterations = 1, warmup = 0, record = "none" }
    H.eq(r.verified, true, "the pipelined tree's outputs over TCP are data mode's")
    H.eq(r.bytes_sent[1], 12 * 2 ^ 20, "each of 2 ranks sends the whole array once")
end

-- pipelines: the accumulated gradients equal the full-batch gradient
local function layers(n)
    local l = {}
    -- params, out_bytes and act_bytes are the MLP's (bind/live.c)
    for i = 1, n do l[i] = { fwd_time = "1 ms" } end
    return l
end
local compute = { model = "mlp", width = 16, dtype = "float64", seed = 3, samples = 8 }
local function live_run(extra)
    return ps.run(F.with({ cluster = c4, layers = layers(8), stages = 4, microbatches = 8,
                           backend = "tcp", compute = compute, record = "none" }, extra))
end

local SCHEDULES = {
    { schedule = "gpipe" }, { schedule = "1f1b" },
    { schedule = "interleaved", virtual_stages = 2 },
    { schedule = "zb_h1" }, { schedule = "zb_h2" },
    { schedule = "looped_bfs", virtual_stages = 2 },
    { schedule = "interleaved_pytorch", virtual_stages = 2 },
    { schedule = "interleaved_zb", virtual_stages = 2 },
    { schedule = "zbv", virtual_stages = 2 },
    { schedule = "dualpipev", virtual_stages = 2 }, { schedule = "dualpipe" },
    { schedule = "gpipe", checkpoint = true }, { schedule = "1f1b", checkpoint = true },
    { schedule = "interleaved", virtual_stages = 2, checkpoint = true },
    { schedule = "1f1b", split_backward = true },
    { stages = 2, schedule = { { "F0", "F1", "B0", "W0", "B1", "W1" },
                               { "F0", "B0", "F1", "W0", "B1", "W1" } }, microbatches = 2 },
    { stages = 1, microbatches = 3 },
}
for _, s in ipairs(SCHEDULES) do
    local name = (type(s.schedule) == "table" and "custom" or tostring(s.schedule or "1f1b")) ..
        (s.checkpoint and " + recompute" or "") .. (s.split_backward and " split" or "")
    local r = live_run(s)
    H.check(r.grad_error < 1e-12, name .. ": grad_error " .. tostring(r.grad_error))
    H.check(r.makespan > 0 and r.simulated > 0, name .. ": measured and simulated")
    H.eq(r.backend, "tcp")
end

-- data parallelism: each pipeline rank's replicas all-reduce their
-- gradients with pipesim's own collectives (bucket by bucket, the
-- backward split at the buckets), every replica then holds the gradient
-- of the global batch
for _, s in ipairs{ { schedule = "1f1b", algorithm = "ring" },
                    { schedule = "1f1b", algorithm = "binomial_tree", checkpoint = true },
                    { schedule = "interleaved", virtual_stages = 2, algorithm = "halving_doubling" },
                    { schedule = "zb_h1", algorithm = "direct" } } do
    local r = live_run{ stages = 2, dp = 2, microbatches = 4, schedule = s.schedule,
                        virtual_stages = s.virtual_stages, checkpoint = s.checkpoint,
                        grad_sync = { algorithm = s.algorithm, bucket = "1 KiB", first_bucket = "512 B" } }
    H.check(r.grad_error < 1e-12, s.schedule .. " dp 2 " .. s.algorithm .. ": grad_error " ..
        tostring(r.grad_error))
    H.eq(#r.held_activations, 4, "one entry per rank of the run")
end
H.raises(function() live_run{ stages = 2, dp = 2, microbatches = 2, zero = 1 } end,
    "ZeRO (zero = 1) is not run live")
H.raises(function() live_run{ layers = { { fwd_time = 1, params = 5 }, { fwd_time = 1 } },
    stages = 2, microbatches = 2 } end, "layer 1: params 5, the live MLP's layer has 272")

-- inference: forwards alone, no gradient to compare
H.check(live_run{ schedule = "forward_only" }.grad_error ~= live_run{ schedule = "forward_only" }.grad_error,
    "forward_only: grad_error is NaN")

-- held activations: GPipe holds all 8 microbatches, 1F1B at most 4 on
-- stage 0, recompute keeps the inputs alone; R takes time
do
    local g = live_run{ schedule = "gpipe" }
    local o = live_run{ schedule = "1f1b" }
    local k = live_run{ schedule = "1f1b", checkpoint = true }
    -- a unit holds its input and both layers' outputs: 3 x 8 x 16 x 8 bytes
    local unit = 3 * 8 * 16 * 8
    H.check(g.held_activations[1] >= 8 * unit, "gpipe holds every microbatch")
    H.check(o.held_activations[1] < g.held_activations[1], "1f1b holds fewer")
    H.check(k.held_activations[1] < o.held_activations[1], "recompute holds fewer")
    H.check(k.recompute_time[1] > 0, "recompute takes time")
    H.eq(o.recompute_time[1], 0)
end

-- a schedule that drops a microbatch or runs W before its B never runs
H.raises(function() live_run{ stages = 2, microbatches = 2,
    schedule = { { "F0", "F1", "B0", "B1" }, { "F0", "F1", "B1" } } } end, "rank 1: B0 is missing")
H.raises(function() live_run{ stages = 2, microbatches = 2,
    schedule = { { "F0", "F1", "B0", "B1" }, { "F0", "F1", "W0", "B0", "B1" } } } end,
    "rank 1: W0 comes before B0")

-- a stalled rank: its peers raise the deadline error naming it
H.raises(function() live_run{ stages = 4, microbatches = 4, faults = { { rank = 2, stall = "at 0 ms" } },
    recv_timeout = "50 ms" } end, "rank 2 stalled at 0 s")
-- (which peer's deadline passes first is a race: the message names one)
H.raises(function() live_coll("allreduce", "ring", 4096, { faults = { { rank = 1, stall = "at 0 ms" } },
    recv_timeout = "50 ms" }) end, "waited 50 ms on recv collective from rank")
H.raises(function() live_coll("allreduce", "ring", 4096, { faults = { { rank = 1, stall = "at 0 ms" } },
    recv_timeout = "50 ms" }) end, "; rank 1 stalled at 0 s")

-- the real deadlock: both ranks' first messages (1 MiB each, past the
-- socket buffers and the staging) wait on the other; the engine's words
do
    local big = { model = "mlp", width = 4, samples = 32768 }
    local order = { { "F0", "F1", "B0", "B1" }, { "F1", "F0", "B1", "B0" } }
    local base = { cluster = c4, layers = layers(2), stages = 2, microbatches = 2, schedule = order,
                   record = "none" }
    local _, sim = pcall(ps.run, base)
    local _, live = pcall(ps.run, F.with(base, { backend = "tcp", compute = big, watchdog = "0.3 s" }))
    local tail = function(m) return tostring(m):match("deadlock at t=[^:]*: (.*)$") end
    H.check(tail(sim) ~= nil, "the simulator deadlocks: " .. tostring(sim))
    H.eq(tail(live), tail(sim), "live mode names the same ranks and ops")
    -- the consistent order completes
    local r = ps.run(F.with(base, { backend = "tcp", compute = big,
        schedule = { { "F0", "F1", "B0", "B1" }, { "F0", "F1", "B0", "B1" } } }))
    H.check(r.grad_error < 1e-12, "the consistent order completes")
end

-- early sends (core/live/early.c): a step's send leaves as the step
-- before reduces, so with every message held 100 ms (injected) the 6
-- steps of a 4-rank ring take about 3 holds, not 6 (each hold overlaps the
-- next step's), and halving-doubling's 4 steps about 2; outputs checked
-- bit for bit as always. 512 KiB messages: past the staging, streamed.
do
    local hold = { latency = "100 ms" }
    local ring = live_coll("allreduce", "ring", 2097152, { inject = hold })
    H.check(ring.time > 0.3 and ring.time < 0.45, "ring with early sends: " .. ring.time)
    local hd = live_coll("allreduce", "halving_doubling", 2097152, { inject = hold })
    H.check(hd.time > 0.2 and hd.time < 0.35, "halving-doubling with early sends: " .. hd.time)
end

-- calibration: the ping-pong's fit recovers a latency and a bandwidth
-- injected into the transport (every message held 100 ms, its bytes
-- paced at 1 MB/s) within 10%, at the sizes ps.calibrate picks itself:
-- from 16 KiB up by 4x until the time clearly grows, which a linear
-- transport does at once (0 B to 256 KiB; the rule itself is checked on
-- fixed times below). Large injected times: a loaded machine adds
-- scheduling delay to every message (1.7 ms at 5 ms injected with the
-- test suite beside other builds at a load of 13 on 2 cores, 4 to 6 ms
-- at 30 ms and a load of 18), which they must dwarf.
do
    local hold = { latency = "100 ms", bandwidth = "1 MB/s" }
    local cal = ps.calibrate{ iterations = 3, warmup = 0, reps = 2, inject = hold }
    H.check(math.abs(cal.latency / 100e-3 - 1) < 0.1, "fitted latency " .. cal.latency)
    H.check(math.abs(cal.bandwidth / 1e6 - 1) < 0.1, "fitted bandwidth " .. cal.bandwidth)
    H.check(cal.sizes[4] == 262144 and #cal.sizes <= 6, "grown to " .. cal.sizes[#cal.sizes])
    H.eq(#cal.one_way, 4)
    local prof = ps.calibrate{ sizes = { 0, 1024 }, iterations = 1, warmup = 0, reps = 2,
                               layers = 2, compute = { model = "mlp", width = 8, samples = 4 } }
    H.eq(#prof.fwd, 2)
    H.check(prof.fwd[1] > 0 and prof.bwd[2] > 0 and prof.wgt[2] > 0, "per-layer times")
    -- four ranks: the exchange among them (the same injection: one flow
    -- each) gives the latency and the flow's bandwidth by Hockney's rule,
    -- and the shared-host model around them; the fastest exchange, as a
    -- delay only ever slows one
    -- (held 200 ms: an exchange waits on a chain of wake-ups around the
    -- ring, 13 ms at a load of 18 with the suite running)
    local ex = ps.calibrate{ ranks = 4, iterations = 2, warmup = 1, reps = 2, statistic = "min",
                             inject = { latency = "200 ms", bandwidth = "1 MB/s" } }
    H.check(math.abs(ex.latency / 200e-3 - 1) < 0.1, "exchange latency " .. ex.latency)
    H.check(math.abs(ex.bandwidth / 1e6 - 1) < 0.1, "exchange bandwidth " .. ex.bandwidth)
    H.check(math.abs(ex.pair.bandwidth / 1e6 - 1) < 0.1, "pair bandwidth " .. ex.pair.bandwidth)
    H.eq(ex.bus, 4 * ex.bandwidth)
    H.check(ex.port >= ex.bandwidth and ex.port <= ex.bus, "port " .. ex.port)
    local hc = ps.cluster(ex.model)
    H.eq(hc.ranks, 4)
    H.eq(hc.topology, "explicit")
    local lat, bw = hc:path(0, 2)
    H.near(lat, ex.latency, 1e-12)
    H.near(bw, ex.port, 1e-12)
    -- the 4 flows of a ring step share the bus: a step of x bytes costs
    -- latency + 4 x / bus, the exchange's own fit
    local ring = ps.collective{ cluster = hc, op = "allreduce", algorithm = "ring", bytes = 4e6,
                                slots = 1, record = "none" }
    H.near(ring.time, 6 * (ex.latency + 1e6 / ex.bandwidth), 1e-9)
    -- the growth of the sizes on fixed times: a linear transport stops at
    -- 256 KiB; one whose cost a byte grows past 64 KiB (a socket buffer)
    -- grows until the slope settles; one whose time never grows fails in
    -- one line naming every size's time
    local function grown(time_of)
        local asked = {}
        local sizes, t = live_mod.grow(function(list)
            local out = {}
            for i, x in ipairs(list) do out[i] = time_of(x) end
            asked[#asked + 1] = table.concat(list, " ")
            return out
        end, "the exchange")
        return table.concat(sizes, " "), t, table.concat(asked, " | ")
    end
    local sz, t = grown(function(x) return 1e-4 + x / 1e9 end)
    H.eq(sz, "0 16384 65536 262144")
    H.near(t[4], 1e-4 + 262144 / 1e9, 1e-12)
    local sz2, _, asked = grown(function(x)
        return 1e-4 + x / 1e9 + (x > 65536 and (x - 65536) / 2.5e8 or 0)
    end)
    H.eq(sz2, "0 16384 65536 262144 1048576")
    H.eq(asked, "0 16384 65536 262144 | 0 1048576")
    H.raises(function() grown(function(x) return 1e-3 + x / 1e12 end) end,
        "ps.calibrate: the exchange's time does not grow with the size up to 16 MiB (16 KiB "
        .. "1 ms, 64 KiB 1 ms, 256 KiB 1 ms, 1 MiB 1 ms, 4 MiB 1 ms, 16 MiB 1.02 ms): no "
        .. "size takes 1.5 times a quarter of it (a loaded machine's waits hide the transfer); "
        .. "give sizes")
    -- Hockney's rule: the latency at the smallest size, the slope from a
    -- quarter of the largest size up
    local l, b = live_mod.hockney({ 0, 1000, 4000, 8000 }, { 1e-3, 5e-3, 2e-3, 3e-3 })
    H.eq(l, 1e-3)
    H.near(b, 4e6, 1e-12)
    H.raises(function() live_mod.hockney({ 0, 1 }, { 1, 2 }) end,
        "ps.calibrate: the exchange needs two sizes from a quarter of the largest up")
    H.raises(function() ps.calibrate{ sizes = { 1024 } } end, "field 'sizes' needs 2 to 64 sizes")
    H.raises(function() ps.calibrate{ pattern = "ring" } end,
        "ps.calibrate: unknown field 'pattern'")
    H.raises(function() ps.calibrate{ bogus = 1 } end, "ps.calibrate: unknown field 'bogus'")
end

-- bad input, in one line each
H.raises(function() live_coll("allreduce", "ring", 64, { backend = "tpc" }) end,
    "field 'backend': unknown backend 'tpc' (expected sim or tcp)")
H.raises(function() ps.collective{ cluster = c4, op = "allreduce", bytes = 64, iterations = 3,
    record = "none" } end, "field 'iterations' applies to backend = \"tcp\" (live mode) only")
H.raises(function() live_coll("allreduce", "ring", 64, { protocol = "ll" }) end,
    "protocol 'll' is NCCL's (give \"none\" or leave it out)")
-- left out on a cluster whose default is NCCL's (a DGX): none, not refused
do
    local dgx = ps.cluster(ps.clusters.dgx("H100", 1))
    local r = ps.collective{ cluster = dgx, ranks = { 0, 1 }, op = "allreduce", algorithm = "ring",
        bytes = 4096, backend = "tcp", iterations = 1, warmup = 0, record = "none" }
    H.eq(r.protocol, "none", "a DGX's live collective runs without NCCL's protocol")
    H.eq(#r.times, 1, "one measured iteration")
end
H.raises(function() live_run{ compute = { model = "gpt" } } end,
    "field 'compute.model': live mode runs \"mlp\", got gpt")
H.raises(function() live_run{ compute = { model = "mlp", dtype = "float32" } } end,
    "live mode computes in \"float64\"")
H.raises(function() live_run{ compute = { model = "mlp", widths = { 4, 4 } } } end,
    "field 'compute.widths' needs 9 entries")
H.raises(function() live_run{ compute = false } end, "field 'compute' must be a table")
H.raises(function() ps.run{ cluster = c4, layers = layers(2), stages = 2, microbatches = 2,
    backend = "tcp", record = "none" } end, "backend = \"tcp\" needs field 'compute'")
H.raises(function() live_run{ faults = { { rank = 1, slow = 0.5 } } } end,
    "backend 'tcp' injects stalls only")

H.done()
