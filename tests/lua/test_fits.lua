-- Memory verdicts: r.fits, r.over_capacity (1-based indices into the
-- per-rank arrays) and r.over_capacity_ranks (cluster ranks from 0) against
-- 1F1B's closed-form peaks, unknown capacities, inherited capacities, dp.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local GiB = 2 ^ 30

-- 4 layers of 1 s, `act` bytes kept per microbatch: 1F1B stage s holds
-- min(p - s, m) microbatches at its peak, so rank r peaks at (4 - r) * act.
local function layers(act) return F.layers(4, { fwd_time = 1, act_bytes = act }) end

local function run(cluster, act, extra)
    return ps.run(F.with({ cluster = cluster, layers = layers(act), stages = 4, microbatches = 8,
                           record = "none" }, extra))
end

-- 1. 30 GiB per microbatch on 80 GiB devices: ranks 0 (120 GiB) and 1 (90
-- GiB) do not fit, ranks 2 (60) and 3 (30) do
do
    local c = ps.cluster{ ranks = 4, device = { memory = "80 GiB" } }
    local r = run(c, 30 * GiB)
    H.eq(r.peak_memory, { 120 * GiB, 90 * GiB, 60 * GiB, 30 * GiB }, "1F1B peaks")
    H.eq(r.fits, false, "two ranks over capacity")
    H.eq(r.over_capacity, { 1, 2 }, "1-based indices into the per-rank arrays")
    H.eq(r.over_capacity_ranks, { 0, 1 }, "cluster ranks from 0")
    for _, i in ipairs(r.over_capacity) do
        H.check(r.peak_memory[i] > 80 * GiB, "indexed peak is over capacity")
    end
    -- exactly at capacity fits
    r = run(c, 20 * GiB)
    H.eq(r.fits, true, "80 GiB peak on an 80 GiB device fits")
    H.eq(r.over_capacity, nil, "nothing over capacity")
    H.eq(r.over_capacity_ranks, nil)
end

-- 2. no memory figure: unknown, not true
do
    local c = ps.cluster{ ranks = 4 }
    local r = run(c, 1)
    H.eq(r.fits, nil, "unknown capacity gives no verdict")
    H.eq(r.over_capacity, nil)
    -- no cluster at all (an ideal one): unknown as well
    r = ps.run{ layers = layers(1), stages = 4, microbatches = 8, record = "none" }
    H.eq(r.fits, nil, "ideal cluster: unknown")
end

-- 3. one rank's capacity known: over it is a verdict, within it is not
-- (the others are unknown)
do
    local c = ps.cluster{ ranks = 4, devices = { [0] = { memory = "100 GiB" } } }
    H.eq(run(c, 30 * GiB).fits, false, "rank 0 over its known capacity")
    H.eq(run(c, 30 * GiB).over_capacity_ranks, { 0 })
    H.eq(run(c, 20 * GiB).fits, nil, "rank 0 fits, the others unknown")
end

-- 4. a flops-only override keeps the cluster's memory
do
    local c = ps.cluster{ ranks = 4, device = { flops = 1e12, memory = "80 GiB" },
                            devices = { [0] = { flops = 5e11 } } }
    -- FLOP layers: a device of its own rescales no layer given as times
    local flop = F.layers(4, { fwd_flops = 1e12, act_bytes = 30 * GiB })
    H.eq(run(c, 30 * GiB, { layers = flop }).over_capacity_ranks, { 0, 1 },
        "rank 0 inherits 80 GiB")
    c = ps.cluster{ ranks = 4, device = { memory = "80 GiB" },
                      devices = { [0] = { memory = "141 GB" } } }
    H.eq(run(c, 30 * GiB).over_capacity_ranks, { 1 }, "a bigger device on rank 0")
end

-- 5. dp = 2, dp_inner: entry k = replica * 4 + stage runs on cluster rank
-- stage * 2 + replica, so stage 0 and 1 of both replicas are over
do
    local c = ps.cluster{ ranks = 8, device = { memory = "80 GiB" } }
    local r = run(c, 30 * GiB, { dp = 2 })
    H.eq(r.over_capacity, { 1, 2, 5, 6 }, "dp: entries of stages 0 and 1")
    H.eq(r.over_capacity_ranks, { 0, 2, 1, 3 }, "dp: their cluster ranks")
    for i, k in ipairs(r.over_capacity) do
        H.eq(r.rank[k], r.over_capacity_ranks[i], "r.rank maps index to rank")
    end
end

-- 6. ps.show's source: core.report returns the report and the warning
-- lines of the run (or of every run), "" when everything fits
do
    local core = require "pipesim.core"
    local c = ps.cluster{ ranks = 4, device = { memory = "80 GiB" } }
    local over = run(c, 30 * GiB, { record = "summary" })
    local fits = run(c, 1, { record = "summary" })
    local want = string.format("pipesim: warning: run %d: rank 0 needs 120 GiB, device has 80 GiB "
        .. "(and 1 more rank over capacity)\n", over.id)
    local text, warn = core.report(nil, over.id, 100)
    H.check(text:find("more than a device has", 1, true), "summary line says so: " .. text)
    H.eq(warn, want, "one run's warning")
    warn = select(2, core.report(nil, fits.id, 100))
    H.eq(warn, "", "a run that fits: no warning")
    warn = select(2, core.report(nil, nil, 100))
    H.eq(warn, want, "the run table warns about the run that does not fit")
end

H.done()
