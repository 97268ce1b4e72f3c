-- Per-rank devices: overrides inherit what they leave out, a straggler in
-- any replica sets the pace, and partition = "time" balances seconds on
-- each rank's own device. Makespans against hand calculations.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local function flop_layers(n, flops) return F.layers(n, { fwd_flops = flops }) end

-- GPipe, free communication, p stages of forward f and backward 2f except
-- one slow stage of forward fs >= f: the forwards flow at the slow stage's
-- pace (m fs) behind a fill of (p-1) f, the backwards likewise, so
-- makespan = 3 (p-1) f + 3 m fs, wherever the slow stage is (fs = f gives
-- the closed form 3 (m+p-1) f).
local function gpipe_straggler(p, m, f, fs)
    return 3 * (p - 1) * f + 3 * m * fs
end

-- 1. a flops-only override keeps the cluster's efficiency (and memory)
do
    local base = { ranks = 4, device = { flops = 1e12, efficiency = 0.5, memory = "80 GiB" } }
    local function cluster(devices)
        return ps.cluster(F.with(base, { devices = devices }))
    end
    local run = function(c)
        return ps.run{ cluster = c, layers = flop_layers(4, 1e12), stages = 4,
                         microbatches = 4, schedule = "gpipe", record = "none" }
    end
    local f = 1e12 / (1e12 * 0.5) -- 2 s per layer forward
    H.near(run(cluster(nil)).makespan, 3 * (4 + 3) * f, 1e-9, "no straggler")
    -- rank 3 at half the peak, efficiency 0.5 inherited: forward 4 s
    local slow = run(cluster({ [3] = { flops = "0.5 TFLOPS" } }))
    H.near(slow.makespan, gpipe_straggler(4, 4, f, 2 * f), 1e-9, "flops override inherits efficiency")
    -- an efficiency-only override inherits the peak
    slow = run(cluster({ [1] = { efficiency = 0.25 } }))
    H.near(slow.makespan, gpipe_straggler(4, 4, f, 2 * f), 1e-9, "efficiency override inherits flops")
    local rates = cluster({ [3] = { flops = "0.5 TFLOPS" } }).flops_rates
    H.eq(rates, { 5e11, 5e11, 5e11, 2.5e11 }, "flops_rates per rank, [r + 1] for rank r")
end

-- 2. the DGX H100 preset: a rank at 70% of the peak is slower, by the hand
-- calculation (intra-node latency 0 and zero-byte activations make
-- communication free, so only the devices differ)
do
    local spec = ps.clusters.dgx("H100", 1, { intra = { latency = 0 } })
    local base = ps.cluster(spec)
    spec.devices = { [3] = { flops = 0.7 * 989e12 } }
    local slow = ps.cluster(spec)
    local layers = flop_layers(4, 4e13)
    local f = 4e13 / (989e12 * 0.45) -- the preset's efficiency, inherited
    local m = 8
    local r0 = ps.run{ cluster = base, layers = layers, stages = 4, microbatches = m,
                         schedule = "gpipe", record = "none" }
    local r1 = ps.run{ cluster = slow, layers = layers, stages = 4, microbatches = m,
                         schedule = "gpipe", record = "none" }
    H.near(r0.makespan, 3 * (m + 3) * f, 1e-9, "DGX H100, no straggler")
    H.near(r1.makespan, gpipe_straggler(4, m, f, f / 0.7), 1e-9, "DGX H100, rank 3 at 70%")
    H.check(r1.makespan > r0.makespan, "a slower rank makes the step slower")
end

-- 2b. layers given as times (ps.models' roofline times them on the
-- cluster's device) cannot follow a rank's own device: an error naming the
-- rank and the way out, never the full-speed step
do
    local spec = ps.clusters.dgx("H100", 1)
    spec.devices = { [3] = { flops = 0.7 * 989e12 } }
    local timed = {}
    for i = 1, 4 do timed[i] = { fwd_time = 1e-3, params = 1 } end
    H.raises(function()
        ps.run{ cluster = ps.cluster(spec), layers = timed, stages = 4, microbatches = 4,
                schedule = "gpipe", record = "none" }
    end, "cluster rank 3 runs on a device of its own (cluster.devices: 3.115e+14 FLOP/s "
        .. "against rank 0's 4.45e+14), but layer 1 carries its times (fwd_time), which no "
        .. "device rescales: give the layers as FLOPs (fwd_flops), or make the rank a "
        .. "straggler with faults = { { rank = 3, slow = s } }")
end

-- 3. a straggler in replica 1 (dp = 2, dp_inner: cluster rank r * 2 + j)
-- slows its pipeline copy, and the step ends with the slower copy
do
    local c = ps.cluster{ ranks = 4, device = { flops = 1e12 },
                            devices = { [1] = { flops = 5e11 } } } -- stage 0, replica 1
    local r = ps.run{ cluster = c, layers = flop_layers(2, 1e12), stages = 2, dp = 2,
                        microbatches = 4, schedule = "gpipe", record = "none" }
    H.near(r.makespan, gpipe_straggler(2, 4, 1, 2), 1e-9, "straggler in replica 1")
    H.eq(r.closed_form_bubble, nil, "not uniform with a straggler in replica 1")
end

-- 4. partition = "time" on a slow rank 3: 8 layers of 1 s forward on ranks
-- 0..2 and 2 s on rank 3. The best bottleneck gives rank 3 one layer (2 s)
-- and the others 7 (at most 3 s); "flops" stays the pure FLOP balance.
do
    local c = ps.cluster{ ranks = 4, device = { flops = 1e12 },
                            devices = { [3] = { flops = 5e11 } } }
    local layers = flop_layers(8, 1e12)
    local function run(partition, schedule)
        return ps.run{ cluster = c, layers = layers, stages = 4, microbatches = 8,
                         schedule = schedule or "1f1b", partition = partition, record = "none" }
    end
    H.eq(ps.partition.resolve("time", layers, 4, { rates = c.flops_rates }), { 3, 2, 2, 1 },
        "time: the slow rank gets the fewest layers")
    H.eq(ps.partition.resolve("flops", layers, 4), { 2, 2, 2, 2 }, "flops ignores devices")
    for _, sched in ipairs { "1f1b", "gpipe" } do
        local best = math.huge
        for counts in ps.partition.enumerate(8, 4) do
            best = math.min(best, run(counts, sched).makespan)
        end
        local r = run("time", sched)
        H.check(r.makespan <= best * (1 + 1e-9),
            string.format("%s: time split %.17g s, best of all 35 splits %.17g s", sched, r.makespan, best))
        H.check(r.makespan < run("flops", sched).makespan, sched .. ": time beats flops on a slow rank")
    end
    -- interleaved, v = 2: rank 3 holds model stages 3 and 7
    local counts = ps.partition.resolve("time", flop_layers(16, 1e12), 8, { rates = c.flops_rates })
    H.check(counts[4] < counts[3] and counts[8] < counts[7],
        "interleaved: rank 3's chunks get fewer layers " .. H.show(counts))
    local r = ps.run{ cluster = c, layers = flop_layers(16, 1e12), stages = 4, virtual_stages = 2,
                        microbatches = 8, schedule = "interleaved", partition = "time", record = "none" }
    local u = ps.run{ cluster = c, layers = flop_layers(16, 1e12), stages = 4, virtual_stages = 2,
                        microbatches = 8, schedule = "interleaved", record = "none" }
    H.check(r.makespan < u.makespan, "interleaved: time beats uniform on a slow rank")
    -- measured times do not depend on the device; "time" uses them as is
    local mixed = { { fwd_time = 3 }, { fwd_flops = 1e12 }, { fwd_flops = 1e12 }, { fwd_flops = 1e12 } }
    local _, w = ps.partition.resolve("time", mixed, 2, { rates = { 1e12, 5e11 } })
    H.eq(w, { 9, 3, 6, 6 }, "seconds of each layer on its stage's device")
    -- checkpointing adds each layer's recompute (recompute_time, else the
    -- forward) to the seconds balanced
    local ck = { { fwd_time = 1, recompute_time = 9 }, { fwd_time = 1 }, { fwd_time = 1 }, { fwd_time = 1 } }
    H.eq(ps.partition.resolve("time", ck, 2), { 2, 2 }, "no checkpointing: 3 s per layer")
    local cc, cw = ps.partition.resolve("time", ck, 2, { checkpoint = true })
    H.eq(cc, { 1, 3 }, "checkpointing: the 12 s layer alone")
    H.eq(cw, { 12, 4, 4, 4 }, "forward + recompute + backward")
end

-- 5. "time" with dp: the slowest replica of each stage counts
do
    local c = ps.cluster{ ranks = 8, device = { flops = 1e12 },
                            devices = { [7] = { flops = 5e11 } } } -- stage 3, replica 1
    local r = ps.run{ cluster = c, layers = flop_layers(8, 1e12), stages = 4, dp = 2,
                        microbatches = 8, partition = "time", record = "summary" }
    H.eq(math.type(r.id), "integer", "recorded")
    local f = ps.run{ cluster = c, layers = flop_layers(8, 1e12), stages = 4, dp = 2,
                        microbatches = 8, partition = "flops", record = "none" }
    H.check(r.makespan < f.makespan, "dp: time accounts the slow replica")
    local p = ps.run{ cluster = c, layers = flop_layers(8, 1e12), stages = 4, dp = 2,
                        placement = "pp_inner", microbatches = 8, partition = "time", record = "none" }
    -- pp_inner: cluster rank 7 is stage 3 of replica 1 as well
    H.near(p.makespan, r.makespan, 1e-9, "pp_inner places the straggler on stage 3 too")
end

H.done()
