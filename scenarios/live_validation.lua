-- live_validation: the simulator against what live mode measures on this
-- machine (docs/live.md, "Measured against simulated").
--
-- 1. Calibrate the machine the 4 ranks run on (ps.calibrate{ ranks = 4 }):
--    the exchange among all 4 ranks at once gives the per-message latency
--    and the host's shared bandwidth, a lone pair's ping-pong the ports
--    (the model: lua/pipesim/live.lua, shared_model), and the live MLP's
--    per-layer F, B and W times measured while 4 processes compute (a
--    profile).
-- 2. Collectives on 4 ranks over loopback TCP, every allreduce algorithm at
--    1 KB to 16 MB: the measured median next to the simulation on the
--    calibrated host, and the ring/tree crossover measured and simulated.
-- 3. GPipe, 1F1B and interleaved on 4 stage processes: the measured step
--    against the step simulated from the calibrated profile, the measured
--    bubble against the closed form.
-- 4. partition = "time" from the measured profile of an uneven MLP against
--    the even split, both measured.
-- 5. Recompute: the measured peak of held activations and the measured
--    time of the recomputes against the simulator's.
-- Every figure is a median over iterations; the spread (max/min of the
-- iterations) says how noisy the machine was. `-D quick=1` (CI) runs a
-- small version that checks the machinery, not the figures.
local ps = require "pipesim"

local quick = ps.args.quick
local KB, MB = 1000, 1000 * 1000
local ITER = quick and 2 or 15
local WARM = quick and 0 or 3

local function spread(times)
    local lo, hi = math.huge, 0
    for _, t in ipairs(times) do lo = math.min(lo, t); hi = math.max(hi, t) end
    return hi / lo
end

local function us(t) return string.format("%9.1f", t * 1e6) end
local function pct(a, b) return string.format("%+6.0f%%", (a / b - 1) * 100) end

-- 1. calibration -------------------------------------------------------
local WIDTHS = quick and { 16, 16, 16, 16, 16, 16, 16, 16, 16 }
    or { 256, 256, 256, 256, 256, 256, 256, 256, 256 }
local SAMPLES = quick and 4 or 64
-- the 4 ranks measured as the runs below load the machine: all exchanging
-- at once (median times), all computing at once
local cal = ps.calibrate{ ranks = 4, iterations = quick and 1 or 5, warmup = quick and 0 or 1,
                          reps = quick and 3 or 20, layers = #WIDTHS - 1,
                          compute = { model = "mlp", widths = WIDTHS, samples = SAMPLES } }
print(string.format("calibrated host: latency %.1f us, %.3f GB/s a flow with 4 flows (bus %.3f "
    .. "GB/s), port %.3f GB/s", cal.latency * 1e6, cal.bandwidth / 1e9, cal.bus / 1e9,
    cal.port / 1e9))
local c4 = ps.cluster(cal.model)

-- 2. collectives --------------------------------------------------------
-- NCCL's ring and tree with their default slots (8 in flight off a mesh;
-- the tree's free slots are signals between ranks, docs/live.md)
local SLOTS = {}
local ALGOS = { "ring", "tree", "double_binary_tree", "binomial_tree", "halving_doubling", "direct" }
local SIZES = quick and { 1 * KB, 64 * KB } or { 1 * KB, 64 * KB, 1 * MB, 16 * MB }
print("\nallreduce on 4 ranks: measured median vs simulated on the calibrated link (us)")
print(string.format("%-20s %9s %9s %9s %7s %7s", "algorithm", "bytes", "measured", "simulated",
    "sim/meas", "spread"))
for _, algo in ipairs(ALGOS) do
    for _, bytes in ipairs(SIZES) do
        local r = ps.collective{ cluster = c4, op = "allreduce", algorithm = algo, bytes = bytes,
                                 slots = SLOTS[algo], backend = "tcp", iterations = ITER,
                                 warmup = WARM }
        print(string.format("%-20s %9d %s %s %s %7.2f", algo, bytes, us(r.time), us(r.simulated),
            pct(r.simulated, r.time), spread(r.times)))
    end
end

-- the ring/tree crossover: the smallest swept size from which the ring is
-- faster, measured and simulated, against each tree
local SWEEP = quick and { 1 * KB, 64 * KB }
    or { 1 * KB, 4 * KB, 16 * KB, 64 * KB, 256 * KB, 1 * MB, 4 * MB, 16 * MB }
print("\nring/tree crossover (the smallest size from which the ring wins)")
for _, tree in ipairs{ "tree", "binomial_tree", "double_binary_tree" } do
    local cm, cs
    for _, bytes in ipairs(SWEEP) do
        local function t(algo)
            local r = ps.collective{ cluster = c4, op = "allreduce", algorithm = algo, bytes = bytes,
                                     slots = SLOTS[algo], backend = "tcp", iterations = ITER,
                                     warmup = WARM, record = "none" }
            return r.time, r.simulated
        end
        local rm, rs = t("ring")
        local tm, ts = t(tree)
        if not cm and rm < tm then cm = bytes end
        if not cs and rs < ts then cs = bytes end
    end
    print(string.format("ring vs %-20s measured %s, simulated %s", tree,
        cm and (cm .. " B") or "beyond the sweep", cs and (cs .. " B") or "beyond the sweep"))
end

-- 3. pipelines -------------------------------------------------------------
-- the profile as layers, with the MLP's params and the bytes it sends and
-- stashes (what live mode fills in, bind/live.c), so that a simulated run
-- of these layers is the live run's twin
local function profiled(p, widths)
    local l = {}
    for i = 1, #p.fwd do
        local out = SAMPLES * widths[i + 1] * 8
        l[i] = { fwd_time = p.fwd[i], bwd_time = p.bwd[i] + p.wgt[i], bwd_weight_time = p.wgt[i],
                 params = widths[i + 1] * (widths[i] + 1), out_bytes = out, act_bytes = out }
    end
    return l
end
local layers = profiled(cal, WIDTHS)
local compute = { model = "mlp", widths = WIDTHS, samples = SAMPLES, seed = 1 }
local M = quick and 4 or 8
print(string.format("\npipelines on 4 stage processes, %d microbatches of %d samples, 8 layers "
    .. "(stage F %.2f ms)", M, SAMPLES, (cal.fwd[1] + cal.fwd[2]) * 1e3))
print(string.format("%-12s %10s %10s %8s %9s %9s %11s", "schedule", "measured", "simulated",
    "sim/meas", "bubble", "closed", "grad_error"))
for _, s in ipairs{ { schedule = "gpipe" }, { schedule = "1f1b" },
                    { schedule = "interleaved", virtual_stages = 2 } } do
    local r = ps.run{ cluster = c4, layers = layers, stages = 4, virtual_stages = s.virtual_stages,
                      microbatches = M, schedule = s.schedule, backend = "tcp", compute = compute,
                      iterations = quick and 1 or 5, warmup = quick and 0 or 1 }
    local v = s.virtual_stages or 1
    local closed = 3 / (v * M + 3)
    print(string.format("%-12s %8.2f ms %8.2f ms %s %8.1f%% %8.1f%% %11.1e", s.schedule,
        r.makespan * 1e3, r.simulated * 1e3, pct(r.simulated, r.makespan), r.bubble * 100,
        closed * 100, r.grad_error))
end

-- 4. partition = "time" from a measured profile of an uneven model ------------
local UNEVEN = quick and { 8, 8, 24, 24, 8, 8, 8, 8, 8 }
    or { 128, 128, 384, 384, 128, 128, 128, 128, 128 }
local ucal = ps.calibrate{ sizes = { 0, 1024 }, iterations = 1, warmup = 0, reps = quick and 2 or 10,
                           concurrent = 4,
                           layers = #UNEVEN - 1,
                           compute = { model = "mlp", widths = UNEVEN, samples = SAMPLES } }
local ulayers = profiled(ucal, UNEVEN)
local ucompute = { model = "mlp", widths = UNEVEN, samples = SAMPLES, seed = 1 }
print("\npartition of an uneven MLP (widths " .. table.concat(UNEVEN, ",") .. ") on 4 stages, 1F1B")
for _, part in ipairs{ "uniform", "time" } do
    local r = ps.run{ cluster = c4, layers = ulayers, stages = 4, microbatches = M, partition = part,
                      backend = "tcp", compute = ucompute, iterations = quick and 1 or 5,
                      warmup = quick and 0 or 1 }
    print(string.format("%-8s measured %8.2f ms  simulated %8.2f ms  spread %.2f", part,
        r.makespan * 1e3, r.simulated * 1e3, spread(r.times)))
end

-- 5. recompute: held activations and extra compute ----------------------
print("\nrecompute (1F1B, 4 stages): stage 0's held activations and recompute time")
for _, ck in ipairs{ false, true } do
    local r = ps.run{ cluster = c4, layers = layers, stages = 4, microbatches = M, checkpoint = ck,
                      backend = "tcp", compute = compute, iterations = quick and 1 or 5,
                      warmup = quick and 0 or 1 }
    local sim = ps.run{ cluster = c4, layers = layers, stages = 4, microbatches = M, checkpoint = ck,
                        record = "none", memory = { weight_bytes = 8, grad_bytes = 8,
                                                    optimizer_bytes = 0 } }
    print(string.format("%-10s held %8.1f KiB (simulated peak %8.1f KiB)  R %.2f ms (simulated "
        .. "%.2f ms)", ck and "recompute" or "none", r.held_activations[1] / 1024,
        (sim.peak_memory[1] - sim.static_memory[1]) / 1024, r.recompute_time[1] * 1e3,
        ck and M * (cal.fwd[1] + cal.fwd[2]) * 1e3 or 0))
end
