-- ps.search: the enumeration's constraints and their drop counts, the
-- closed-form peak memory equal to the simulated one for the Megatron-order
-- schedules, the step-time bound below every simulated step, the bound's
-- pruning finding the same best plan and Pareto front as simulating every
-- configuration, and the error messages. Runs under `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

-- a small GPT on one DGX A100 node (8 GPUs): 8 layers, 8 heads
local model = { layers = 8, hidden = 512, heads = 8, seq = 512, vocab = 8192, tied = true }
local node = ps.cluster(ps.clusters.dgx("A100", 1))

local labels = F.labels

-- every configuration simulated
local space = { tp = { 1, 2 }, pp = { 1, 2, 4 }, virtual_stages = { 1, 2 }, microbatch = { 1, 2 },
    schedule = { "1f1b", "interleaved", "gpipe" }, recompute = { "none", "selective", "full" },
    zero = { 0, 1 } }
local all = ps.search { name = "all", model = model, cluster = node, gpus = 8, global_batch = 16,
    space = space, prune = "none", record = "none" }
-- raw: 2 x 3 x 2 x 2 x 3 x 3 x 2 = 432; dp follows from 8 / (tp pp)
H.eq(all.raw, 432)
-- virtual stages: v = 2 needs interleaved with pp > 1 (8 / 4 = 2 layers
-- a stage at pp 4, divisible by 2) and interleaved needs v > 1
local drops = all.dropped
-- by hand: per (tp, pp, mb, recompute, zero) 12 of the 18 (v, schedule)
-- pairs are removed at pp > 1 (v = 2 with 1f1b or gpipe, v = 1 with
-- interleaved: 3 of 6), all but (v1, 1f1b) and (v1, gpipe) at pp = 1
-- (4 of 6): 2 tp x 2 mb x 3 rc x 2 zero = 24 groups per pp:
-- pp 1: 24 x 4 = 96; pp 2, 4: 24 x 3 each = 144; total 240
H.eq(drops.virtual_stages, 240, "virtual_stages drops")
H.eq(all.simulated, all.valid, "prune = 'none' simulates every valid configuration")
local exact_rows, bound_ok = 0, true
for _, r in ipairs(all.table) do
    H.eq(r.status, "simulated", r.label)
    if r.memory_exact then
        exact_rows = exact_rows + 1
        H.near(r.memory, r.peak_memory, 1e-9, "closed-form peak = simulated, " .. r.label)
    end
    if not (r.bound <= r.step_time * (1 + 1e-12)) then
        bound_ok = false
        H.check(false, string.format("bound %.9g above the step %.9g: %s", r.bound, r.step_time, r.label))
    end
end
H.check(bound_ok, "the lower bound is below every simulated step time")
H.check(exact_rows == all.simulated, "gpipe, 1f1b and interleaved have the exact closed form")

-- ZeRO-2 and 3 (Megatron-FSDP's optim_grads and optim_grads_params,
-- docs/sharding.md): simulated; the closed-form memory leaves their
-- buffers out, so it is a lower bound on the peak, and the step-time bound
-- holds
local sharded = ps.search { name = "sharded", model = model, cluster = node, gpus = 8,
    global_batch = 16, space = { tp = { 1, 2 }, pp = { 1, 2 }, zero = { 2, 3 } },
    prune = "none", record = "none" }
H.eq(sharded.simulated, 8, "2 tp x 2 pp x 2 zero simulated")
local stages_seen = {}
for _, r in ipairs(sharded.table) do
    H.eq(r.status, "simulated", r.label)
    H.check(not r.memory_exact and r.memory <= r.peak_memory * (1 + 1e-12),
        "memory a lower bound: " .. r.label)
    H.check(r.bound <= r.step_time * (1 + 1e-12), "step bound: " .. r.label)
    stages_seen[r.label:match("zero(%d)")] = true
end
H.check(stages_seen["2"] and stages_seen["3"], "both stages in the table")

-- ZeRO-2/3 with every schedule: ps.run does not model them with a split
-- backward (core/par/dp.c), so the search drops those first. tp 1 pp 2
-- (dp 4, m 4), v {1, 2}, 11 schedules, ZeRO-2: 22 raw; virtual_stages
-- drops 3 at v 1 (interleaved, zbv, dualpipev) and 5 at v 2 (gpipe, 1f1b,
-- zb_h1, zb_h2, dualpipe); zero_schedule 7 of the 14 left (zb_h1, zb_h2,
-- interleaved_zb at v 1 and 2, zbv, dualpipev, dualpipe); the other 7 run
do
    local z = ps.search { name = "zero2 schedules", model = model, cluster = node, gpus = 8,
        global_batch = 16, prune = "none", record = "none",
        space = { pp = { 2 }, virtual_stages = { 1, 2 }, zero = { 2 },
                  schedule = { "gpipe", "1f1b", "interleaved", "zb_h1", "zb_h2", "looped_bfs",
                               "interleaved_pytorch", "interleaved_zb", "zbv", "dualpipev",
                               "dualpipe" } } }
    H.eq(z.raw, 22)
    H.eq(z.dropped.virtual_stages, 8)
    H.eq(z.dropped.zero_schedule, 7)
    H.eq(z.dropped["ps.run"], nil, "none refused by ps.run")
    H.eq(z.simulated, 7)
end

-- the other schedules (every one ps.run trains with): the closed form is a
-- lower bound on the peak, the step-time bound still holds; V-shape
-- schedules need v = 2, dualpipe v = 1 (two copies of each stage), and the
-- schedules' own rules on m are applied before simulating (constraint
-- 'schedule'), so none fails in ps.run
local others = { "zb_h1", "zb_h2", "looped_bfs", "interleaved_pytorch", "interleaved_zb", "zbv",
                 "dualpipev", "dualpipe" }
local other = ps.search { name = "other", model = model, cluster = node, gpus = 8,
    global_batch = 16, space = { tp = { 1, 2 }, pp = { 2, 4 }, virtual_stages = { 1, 2 },
        microbatch = { 1, 2 }, schedule = others, recompute = { "none", "full" } },
    prune = "none", record = "none" }
-- raw: 2 tp x 2 pp x 2 v x 2 mb x 8 schedules x 2 recompute = 256
H.eq(other.raw, 256)
-- by hand, per (tp, recompute), so x 4: virtual_stages drops v 2 of
-- zb_h1, zb_h2, dualpipe and v 1 of zbv, dualpipev (5 of each 8 pairs a
-- (pp, mb)): 4 x 5 = 20; x 4 = 80. schedule: m = 16 / (dp mb) with dp =
-- 8 / (tp pp): tp 1 pp 2 m 4 (mb 1), 2 (mb 2); tp 1 pp 4 m 8, 4; tp 2
-- pp 2 m 8, 4; tp 2 pp 4 m 16, 8. dualpipev (v 2) needs m >= 2 pp: fails
-- at tp 1 mb 2 (pp 2: 2 < 4; pp 4: 4 < 8); dualpipe (v 1, pp and m even,
-- m >= 2 pp) the same two; interleaved_pytorch and interleaved_zb (m a
-- multiple of max(1, m // pp)) none: 2 x 2 schedules x 2 recompute = 8
H.eq(other.dropped.virtual_stages, 80, "virtual_stages drops")
H.eq(other.dropped.schedule, 8, "dualpipe and dualpipev's m >= 2p, before simulating")
H.eq(other.dropped["ps.run"], nil, "no configuration fails in ps.run")
H.eq(other.valid, 256 - 80 - 8)
local lower_ok, seen = true, {}
for _, r in ipairs(other.table) do
    H.eq(r.status, "simulated", r.label)
    seen[r.schedule] = true
    H.check(not r.memory_exact, r.label .. ": no exact closed form claimed")
    if r.memory > r.peak_memory * (1 + 1e-12) or r.bound > r.step_time * (1 + 1e-12) then
        lower_ok = false
        H.check(false, string.format("%s: memory %.9g > %.9g or bound %.9g > %.9g", r.label,
            r.memory, r.peak_memory, r.bound, r.step_time))
    end
end
H.check(lower_ok, "memory and step-time bounds below the simulated values")
for _, k in ipairs(others) do H.check(seen[k], k .. " simulated") end
-- and the pruned search over them finds the same best and front
local other_pruned = ps.search { name = "other pruned", model = model, cluster = node, gpus = 8,
    global_batch = 16, space = { tp = { 1, 2 }, pp = { 2, 4 }, virtual_stages = { 1, 2 },
        microbatch = { 1, 2 }, schedule = others, recompute = { "none", "full" } },
    record = "none" }
H.eq(other_pruned.best.label, other.best.label, "pruned: the same best over every schedule")
H.eq(labels(other_pruned.pareto), labels(other.pareto), "and the same front")
H.check(other_pruned.simulated < other.simulated, "and fewer simulated")

-- pruning by the bound: same best, same front, fewer simulations
local pruned = ps.search { name = "pruned", model = model, cluster = node, gpus = 8,
    global_batch = 16, space = space, record = "none" }
F.same_search(H, all, pruned)
H.eq(pruned.simulated + pruned.pruned, pruned.valid)

-- the front: sorted by memory, each faster than the one before
for i = 2, #all.pareto do
    H.check(all.pareto[i].peak_memory >= all.pareto[i - 1].peak_memory and
        all.pareto[i].step_time < all.pareto[i - 1].step_time, "front is a staircase")
end
-- the best is the front's fastest (last) point
H.eq(all.pareto[#all.pareto].label, all.best.label)

-- memory: a device too small for some drops them before simulation
local small = ps.cluster(ps.clusters.dgx("A100", 1, { device = { memory = "120 MiB" } }))
local m = ps.search { model = model, cluster = small, gpus = 8, global_batch = 16,
    space = { tp = { 1, 2, 4, 8 }, pp = { 1 }, recompute = { "none", "full" } }, prune = "none",
    record = "none" }
H.check((m.dropped.memory or 0) > 0, "memory drops counted")
for _, r in ipairs(m.table) do
    H.check(r.memory <= 120 * 2 ^ 20 and r.fits, "kept configurations fit: " .. r.label)
end
H.eq(m.valid + m.dropped.memory, m.raw, "every raw configuration is kept or dropped once")

-- c:path, the route figures the bound reads: NVLink inside a node (NCCL's
-- 200 GB/s of A100's NVLink 3, 0.6 us), the NIC between nodes (25 GB/s,
-- 2.7 us), a mesh's own link per pair, nothing to itself
do
    local two = ps.cluster(ps.clusters.dgx("A100", 2))
    local lat, bw, first, id = two:path(0, 1)
    H.near(lat, 0.6e-6, 1e-12); H.near(bw, 200e9, 1e-12); H.near(first, 200e9, 1e-12)
    local lat8, bw8, first8, id8 = two:path(0, 8)
    H.near(lat8, 2.7e-6, 1e-12); H.near(bw8, 25e9, 1e-12); H.near(first8, 25e9, 1e-12)
    H.check(math.type(id) == "integer" and math.type(id8) == "integer" and id ~= id8,
        "inside and across nodes leave on other links")
    H.eq(table.pack(two:path(3, 3)), { 0, math.huge, n = 4 }, "no route to itself")
    local mesh = ps.cluster { ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
    local ml, mb, mf, mid = mesh:path(0, 3)
    H.near(ml, 5e-6, 1e-12); H.eq({ mb, mf }, { 25e9, 25e9 }); H.eq(mid, nil, "a mesh pair: its own link, no id")
    H.raises(function() mesh:path(0, 4) end, "rank out of range")
end

-- the bound counts the network: microbatch 0's activations cross each
-- stage boundary before the last stage starts, and without overlap the
-- gradient sync (all-reduce, or ZeRO-1's reduce-scatter and all-gather)
-- comes between the last backward and the end of the step. On a slow
-- network between two nodes (1 GB/s, 50 us) it stays below the simulated
-- step, within 1% of it with dp 2 across the nodes (counting compute alone
-- it was 40-47%); with pp 2 the transfers are a small part of 16
-- microbatches (gpipe: 80% before, 82% now).
do
    local slow = ps.cluster(ps.clusters.dgx("A100", 2, { inter = { bandwidth = "1 GB/s", latency = "50 us" } }))
    local net = ps.search { name = "slow network", model = model, cluster = slow, gpus = 16,
        global_batch = 16, prune = "none", record = "none",
        space = { tp = { 8 }, pp = { 1, 2 }, microbatch = { 1 }, schedule = { "1f1b", "gpipe" },
                  zero = { 0, 1 } } }
    H.eq(net.simulated, 6, "dp 2 x {zero 0, 1} x 2 schedules, pp 2 x 2 schedules")
    for _, r in ipairs(net.table) do
        H.check(r.bound <= r.step_time * (1 + 1e-12),
            string.format("bound %.9g <= step %.9g: %s", r.bound, r.step_time, r.label))
        local want = r.dp > 1 and 0.99 or 0.8
        H.check(r.bound >= want * r.step_time,
            string.format("bound %.9g within %g of step %.9g: %s", r.bound, want, r.step_time, r.label))
    end
    -- ZeRO-2/3 reduce-scatter after every microbatch's backward (and
    -- ZeRO-3 all-gathers before each forward and backward) beside the
    -- compute: the bound counts what the rank must send, 84 to 98% of the
    -- step here (compute alone was 12 to 23%)
    local sharded_net = ps.search { name = "slow network, sharded", model = model, cluster = slow,
        gpus = 16, global_batch = 16, prune = "none", record = "none",
        space = { tp = { 8 }, microbatch = { 1 }, schedule = { "1f1b", "gpipe" }, zero = { 2, 3 } } }
    H.eq(sharded_net.simulated, 4, "dp 2 x {zero 2, 3} x 2 schedules")
    for _, r in ipairs(sharded_net.table) do
        H.check(r.bound <= r.step_time * (1 + 1e-12) and r.bound >= 0.8 * r.step_time,
            string.format("bound %.9g within 0.8 of step %.9g: %s", r.bound, r.step_time, r.label))
    end
end

-- plans too large to simulate (max_collective_steps; 30 M by default):
-- skipped with status "too large", and the best unproven where their
-- bound is below it. tp 1 pp 1 dp 8 ZeRO-3, 2 microbatches: 8 ranks x 6
-- (ZeRO-2/3's weight) x 2 x 8 layers x 2 x 7 steps x 3 = 32,256 > 5,000;
-- ZeRO-1: 8 x 4 x 7 = 224; tp 8 (dp 1): none
do
    local big = ps.search { name = "too large", model = model, cluster = node, gpus = 8,
        global_batch = 16, space = { tp = { 1, 8 }, zero = { 1, 3 } }, prune = "none",
        record = "none", max_collective_steps = 5000 }
    local st = {}
    for _, r in ipairs(big.table) do st[r.label] = r.status end
    H.eq(st["tp1 pp1 dp8 v1 mb1 1f1b none zero3"], "too large")
    H.eq(st["tp1 pp1 dp8 v1 mb1 1f1b none zero1"], "simulated")
    H.eq(big.dropped.too_large, 1)
    H.eq(big.simulated, 2, "tp 1 ZeRO-1 and tp 8 (ZeRO at dp 1 is one configuration)")
    local z3 = big.table[2]
    H.eq(z3.label, "tp1 pp1 dp8 v1 mb1 1f1b none zero3")
    H.eq(z3.error, "about 32256 collective steps to simulate, more than max_collective_steps (5000)")
    H.eq(big.unproven, z3.bound < big.best.step_time and 1 or 0)
end

-- errors
local base = { model = model, cluster = node, gpus = 8, global_batch = 16 }
H.raises(function() ps.search(F.with(base, { space = { tp = { 1 } }, max_collective_steps = "many" })) end,
    "ps.search: field 'max_collective_steps' must be a number >= 0, got 'many'")
local function with(t) return F.with(base, t) end
H.raises(function() ps.search(with { space = { microbatchs = { 2 } } }) end,
    "ps.search: space: unknown field 'microbatchs' (did you mean 'microbatch'?)")
H.raises(function() ps.search(with { space = {} }) end, "ps.search: empty space")
H.raises(function() ps.search(with { space = { schedule = { "1f1b", "zb-h1" } } }) end,
    "ps.search: space.schedule[2] must be one of gpipe, 1f1b, interleaved, zb_h1, zb_h2, " ..
    "looped_bfs, interleaved_pytorch, interleaved_zb, zbv, dualpipev, dualpipe, got 'zb-h1'")
H.raises(function() ps.search(with { space = { tp = { 1 } }, globl_batch = 16 }) end,
    "ps.search: unknown field 'globl_batch' (did you mean 'global_batch'?)")
H.raises(function() ps.search(with { space = { tp = {} } }) end, "space.tp is an empty list")
H.raises(function() ps.search(with { space = { zero = { 4 } } }) end,
    "space.zero[1] must be 0, 1, 2 or 3 (ZeRO's stage")
H.raises(function() ps.search(with { space = { pp = { 3 } } }) end,
    "no valid configuration: constraint 'gpus' removed the last 1 candidates")
H.raises(function() ps.search(with { space = { tp = { 8 }, microbatch = { 3 } } }) end,
    "constraint 'global_batch' removed the last 1 candidates")
H.raises(function()
    ps.search { model = model, cluster = small, gpus = 1, global_batch = 16,
        space = { microbatch = { 16 } } }
end, "constraint 'memory' removed the last 1 candidates (the smallest, tp1 pp1 dp1 v1 mb16")
H.raises(function() ps.search(with { space = { tp = { 1 } }, objective = "cost" }) end,
    "unknown objective 'cost'")
H.done()
