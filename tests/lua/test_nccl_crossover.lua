-- run with --unsafe: it requires its helper tests/lua/nccl_tuner_model.lua
-- NCCL's own model (tests/lua/nccl_tuner_model.lua: ncclTopoTuneModel and
-- ncclTopoGetAlgoTime, src/graph/tuning.cc, NCCL 2.30.7, on the graphs
-- NCCL's search finds on DGX A100 and DGX H100) checked against figures
-- computed by hand from tuning.cc, and its ring/tree crossover set beside
-- pipesim's auto (README "Against NCCL").
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local NM = require "nccl_tuner_model"

-- by hand, DGX H100 x 2 (16 ranks, Intel CPUs, ring and tree 8 x 48 GB/s):
-- ring LL: busBw min(llMaxBw 39, 384 x .5) = 39, algbw 39 x 16/30;
-- latency 6.6 + 28 x max(0.6, 1.0 net overhead) + 2 x 2.7 = 40.0 us
do
    local bw, lat = NM.tune("h100", 2, 8, "ring", 1)
    H.near(bw, 39 * 16 / 30, 1e-12, "h100 x2 ring LL bw")
    H.near(lat, 40.0, 1e-12, "h100 x2 ring LL latency")
    -- ring LL128: min(384 x .92, 8 x 36.7) = 293.6; 14 + 28 x 1.9 + 2 x 4.0
    bw, lat = NM.tune("h100", 2, 8, "ring", 2)
    H.near(bw, 293.6 * 16 / 30, 1e-12, "h100 x2 ring LL128 bw")
    H.near(lat, 14 + 28 * 1.9 + 8, 1e-12, "h100 x2 ring LL128 latency")
    -- ring Simple: 384; 8.4 + 28 x max(3.4, 3.0) + 2 x 14, x 1.4 (plateau)
    bw = NM.tune("h100", 2, 8, "ring", 3)
    H.near(bw, 384 * 16 / 30, 1e-12, "h100 x2 ring simple bw")
    H.near(NM.time("h100", 2, 8, "ring", 3, 2 ^ 30),
        (8.4 + 28 * 3.4 + 28) * 1.4 + 2 ^ 30 / (1000 * 384 * 16 / 30), 1e-12,
        "h100 x2 ring simple 1 GiB")
    -- tree LL128: min(384 x .92, 8 x 41.4) = 331.2, then min(x 120/128,
    -- 8 x 36.7) = 293.6, algbw / 2; latency 14 + 2 (7 x 1.25 + 1 x 8.5);
    -- at 1 MiB the correction factor of log2(2^20 / 64) = 14 is .6
    bw, lat = NM.tune("h100", 2, 8, "tree", 2)
    H.near(bw, 293.6 / 2, 1e-12, "h100 x2 tree LL128 bw")
    H.near(lat, 14 + 2 * (7 * 1.25 + 8.5), 1e-12, "h100 x2 tree LL128 latency")
    H.near(NM.time("h100", 2, 8, "tree", 2, 2 ^ 20), lat + 2 ^ 20 / (1000 * bw * .6), 1e-12,
        "h100 x2 tree LL128 1 MiB")
    -- DGX A100 x 4 (AMD CPUs: llMaxBw 19.0, net overhead 2 us; 8 x 24):
    -- ring LL latency 6.6 + (62 - 6) x 2.0 + 6 x 2.7
    bw, lat = NM.tune("a100", 4, 8, "ring", 1)
    H.near(bw, 19.0 * 32 / 62, 1e-12, "a100 x4 ring LL bw")
    H.near(lat, 6.6 + 56 * 2.0 + 6 * 2.7, 1e-12, "a100 x4 ring LL latency")
    -- one node, DGX A100 12 x 20: ring Simple 240 x 8/14, latency 8.4 + 14 x 3.4
    bw, lat = NM.tune("a100", 1, 8, "ring", 3)
    H.near(bw, 240 * 8 / 14, 1e-12, "a100 x1 ring simple bw")
    H.near(lat, 8.4 + 14 * 3.4, 1e-12, "a100 x1 ring simple latency")
end

-- the crossover helper on lines with a known meeting point: ring 20 + x,
-- tree 2 + 2x meet at x = 18, the next multiple of 4 being 20
H.eq(NM.crossover(function(x) return 20 + x end, function(x) return 2 + 2 * x end), 20)
H.eq(NM.crossover(function(x) return 1 + x end, function(x) return 2 + x end), nil)

-- simulate = false: the same choice and prediction as a simulated run,
-- without the run (the scan below makes ~1000 of them)
do
    local c = ps.cluster(ps.clusters.dgx("h100", 2))
    for _, b in ipairs{ 8, 2 ^ 20, 2 ^ 26 } do
        local spec = { cluster = c, op = "allreduce", bytes = b, record = "none" }
        local sim = ps.collective(spec)
        spec.record, spec.simulate = nil, false
        local pre = ps.collective(spec)
        H.eq(pre.algorithm, sim.algorithm, "simulate = false: algorithm at " .. b)
        H.eq(pre.protocol, sim.protocol, "simulate = false: protocol at " .. b)
        H.eq(pre.predicted, sim.predicted, "simulate = false: predicted at " .. b)
        H.eq(pre.channels, sim.channels, "simulate = false: channels at " .. b)
        H.eq(pre.time, nil, "simulate = false: no simulated time")
    end
end

-- NCCL's crossover against pipesim's: where auto's pick turns from tree to
-- ring (auto ranks NCCL's tree with NCCL's treeCorrectionFactor as a
-- floor, core/coll/choose.c tuner_rank), and for the record where the
-- predicted times (physical: no correction) cross; printed for README
-- "Against NCCL"; one node: ring from 8 B in both
local function pipesim_crossover(c)
    local function picks_ring(b)
        return ps.collective{ cluster = c, op = "allreduce", protocol = "auto", bytes = b,
            simulate = false }.algorithm == "ring"
    end
    return NM.crossover(function(b) return picks_ring(b) and 0 or 1 end,
        function() return 0.5 end, 2 ^ 30)
end
local function predicted_crossover(c)
    local function pred(algo)
        return function(b)
            return ps.collective{ cluster = c, op = "allreduce", algorithm = algo,
                protocol = "auto", bytes = b, simulate = false }.predicted * 1e6
        end
    end
    return NM.crossover(pred("ring"), pred("tree"), 2 ^ 30)
end

local function kib(x) return x and string.format("%.0f KiB", x / 1024) or "none" end
for _, g in ipairs{ "a100", "h100" } do
    for _, n in ipairs{ 1, 2, 4, 8 } do
        local x = NM.nccl_crossover(g, n, 8)
        local y = pipesim_crossover(ps.cluster(ps.clusters.dgx(g, n)))
        local z = predicted_crossover(ps.cluster(ps.clusters.dgx(g, n)))
        print(string.format("crossover %s x%d: NCCL %s, pipesim %s%s; predicted times %s%s", g, n,
            kib(x), kib(y), x and y and string.format(" (%.2fx)", y / x) or "", kib(z),
            x and z and string.format(" (%.2fx)", z / x) or ""))
        if n == 1 then
            H.eq(x, nil, g .. " x1: NCCL's ring wins from 8 B")
            H.eq(y, nil, g .. " x1: pipesim's ring wins from 8 B")
        else
            H.check(x and y, g .. " x" .. n .. ": tree wins small sizes in both")
            -- issue 14's goal, within 2x, on 2, 4 and 8 nodes (1.02-1.16x
            -- since auto ranks the tree with NCCL's treeCorrectionFactor;
            -- before, 1.23-1.34x on 4 and 8 nodes and 10.4x / 2.42x on
            -- A100 / H100 x2, where NCCL's ring and tree stay within 10 %
            -- of each other from 2 to 128 MiB and the factor decides)
            H.check(y / x <= 2 and y / x >= 0.5,
                string.format("%s x%d: crossover within 2x of NCCL's (%.2fx)", g, n, y / x))
            -- the tree's latency is NCCL's: 2 log2(nodes) network steps of
            -- 5.0 us with LL, of which the link charges 2.7 (ring LL's) and
            -- the protocol the rest (core/coll/proto.c)
            local _, lat = NM.tune(g, n, 8, "tree", 1)
            local t = ps.collective{ cluster = ps.cluster(ps.clusters.dgx(g, n)), op = "allreduce",
                algorithm = "tree", protocol = "ll", bytes = 8, simulate = false }.predicted
            H.near(t * 1e6, lat, 1e-3, g .. " x" .. n .. ": tree LL at 8 B is NCCL's latency")
        end
    end
end
-- README "Against NCCL": point by point, pipesim's predicted time over
-- NCCL's model's (each algorithm with its best protocol), then ring /
-- tree in pipesim and in NCCL's model; and auto's (algorithm, protocol)
-- beside NCCL's pick between ring and tree
for _, g in ipairs{ "a100", "h100" } do
    for _, n in ipairs{ 2, 4, 8 } do
        local c = ps.cluster(ps.clusters.dgx(g, n))
        local cells = {}
        for _, b in ipairs{ 2 ^ 20, 2 ^ 22, 2 ^ 24, 2 ^ 26, 2 ^ 28 } do
            local function pred(algo)
                return ps.collective{ cluster = c, op = "allreduce", algorithm = algo,
                    protocol = "auto", bytes = b, simulate = false }.predicted * 1e6
            end
            local r, t = pred("ring"), pred("tree")
            local nr, nt = NM.best(g, n, 8, "ring", b), NM.best(g, n, 8, "tree", b)
            cells[#cells + 1] = string.format("%.2f / %.2f (%.2f, %.2f)", r / nr, t / nt,
                r / t, nr / nt)
        end
        print(string.format("point by point %s x%d: %s", g, n, table.concat(cells, " | ")))
    end
    for _, n in ipairs{ 1, 2, 4, 8 } do
        local c = ps.cluster(ps.clusters.dgx(g, n))
        local cells = {}
        for _, b in ipairs{ 8, 2 ^ 20, 2 ^ 26, 2 ^ 33 } do
            local r = ps.collective{ cluster = c, op = "allreduce", protocol = "auto", bytes = b,
                simulate = false }
            local nr, pr = NM.best(g, n, 8, "ring", b)
            local nt, pt = NM.best(g, n, 8, "tree", b)
            cells[#cells + 1] = string.format("%s/%s (%s)", r.algorithm, r.protocol,
                n == 1 and "ring/" .. pr or nr <= nt and "ring/" .. pr or "tree/" .. pt)
        end
        print(string.format("choice %s x%d: %s", g, n, table.concat(cells, " | ")))
    end
end
H.done()
