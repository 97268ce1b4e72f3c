-- NCCL's caps on a protocol's bandwidth and the network post overhead
-- (core/coll/proto.c, after ncclTopoTuneModel in src/graph/tuning.cc, NCCL
-- 2.30.7) against their closed forms on small clusters: the simulated bus
-- bandwidth is min(the network's x the protocol's efficiency, the cap).
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local us = 1e-6
local function coll(c, algo, proto, bytes, extra)
    return ps.collective(F.with({ cluster = c, op = "allreduce", algorithm = algo, protocol = proto,
                                  bytes = bytes, record = "none" }, extra))
end
local function node4(bw, fields)
    local t = { nodes = 1, gpus_per_node = 4, intra = { bandwidth = bw, latency = 1e-6 },
                inter = { bandwidth = 25e9, latency = 2.7e-6 } }
    for k, v in pairs(fields or {}) do t[k] = v end
    return ps.cluster(t)
end

-- One node of 4 GPUs, ring: 6 steps, each hop 1 us, the slot-pipelined
-- ring's bandwidth term 6 x (T w / 4) / B = 1.5 T w / B at w wire bytes
-- per payload byte; busbw factor 2 x 3 / 4 = 1.5.
do
    local T, a = 2 ^ 24, 1e-6
    -- Ampere on one node: llMaxBw 87.7 GB/s. NVLink at 1000 GB/s would
    -- give LL 500: capped, so the bandwidth term is 1.5 T / 87.7 GB/s;
    -- latency LL's base 6.6 us and the links' own (LL's)
    local fast = node4(1000e9, { compute_capability = 80 })
    local r = coll(fast, "ring", "ll", T)
    H.near(r.time, 6 * a + 6.6 * us + 1.5 * T / 87.7e9, 1e-9, "ring LL capped at llMaxBw")
    H.near(r.predicted, r.time, 1e-9, "ring LL model")
    H.near(r.busbw, T * 1.5 / r.time, 1e-12, "busbw")
    -- Hopper: 141 GB/s
    r = coll(node4(1000e9, { compute_capability = 90 }), "ring", "ll", T)
    H.near(r.time, 6 * a + 6.6 * us + 1.5 * T / 141e9, 1e-9, "Hopper llMaxBw")
    -- at 100 GB/s LL gives 50: below the cap, efficiency .5 alone
    r = coll(node4(100e9, { compute_capability = 80 }), "ring", "ll", T)
    H.near(r.time, 6 * a + 6.6 * us + 1.5 * T * 2 / 100e9, 1e-9, "ring LL below the cap")
    -- without a compute capability, no caps: efficiency .5 at 1000 GB/s
    r = coll(node4(1000e9), "ring", "ll", T)
    H.near(r.time, 6 * a + 6.6 * us + 1.5 * T * 2 / 1000e9, 1e-9, "no compute capability")
    -- LL128: perChMaxRingLL128Bw 20 GB/s (Ampere) x NCCL's 2 channels = 40;
    -- latency base 14 us and 1.9 - 0.6 us per step over LL's
    local two = node4(1000e9, { compute_capability = 80, nccl_channels = 2 })
    r = coll(two, "ring", "ll128", T)
    H.near(r.time, 6 * a + (14 + 6 * 1.3) * us + 1.5 * T / 40e9, 1e-9, "ring LL128 capped")
    -- unknown channels on one node: no per-channel cap, efficiency .92
    r = coll(fast, "ring", "ll128", T)
    H.near(r.time, 6 * a + (14 + 6 * 1.3) * us + 1.5 * T / (.92 * 1000e9), 1e-9,
        "ring LL128, channels unknown")
    -- Simple has no cap
    r = coll(two, "ring", "simple", T)
    H.near(r.time, 6 * a + (8.4 + 6 * 2.8) * us + 1.5 * T / 1000e9, 1e-9, "ring Simple")
end

-- NCCL's tree on one node is a chain of 4 GPUs (2 x 3 steps), both trees
-- on it. With many chunks every GPU's NVLink carries 4 flows at once (both
-- trees, up and down): 2 T per GPU, algorithm bandwidth B / 2 at one wire
-- byte. The cap: perChMaxTreeBw 24 GB/s (Ampere, one node) x 2 channels =
-- 48 of bus bandwidth, algorithm bandwidth half that (tuning.cc: ratio
-- .5), so w = (B / 2) / 24 GB/s. One chunk (below) runs one flow per link
-- per step, each moving T w / 2: 6 (a + T / (4 x 24 GB/s)). LL: the cap /
-- 3.8 (below llMaxBw 87.7); LL128: min(48 x 7/9, 2 x 20).
do
    local T, a = 2 ^ 24, 1e-6
    local two = node4(1000e9, { compute_capability = 80, nccl_channels = 2 })
    local r = coll(two, "tree", "simple", T, { chunks = 1 })
    H.near(r.time, 6 * (a + T / (4 * 24e9)) + (8.4 + 2 * 3 * 3.4) * us, 1e-9, "tree Simple capped")
    H.near(r.predicted, r.time, 1e-9, "tree model")
    r = coll(two, "tree", "ll", T, { chunks = 1 })
    H.near(r.time, 6 * (a + T / (4 * 24e9 / 3.8)) + 6.8 * us, 1e-9, "tree LL capped")
    r = coll(two, "tree", "ll128", T, { chunks = 1 })
    H.near(r.time, 6 * (a + T / (4 * 48e9 * 7 / 9 / 2)) + (14 + 2 * 3 * 0.65) * us, 1e-9,
        "tree LL128 capped")
end

-- Two nodes of 2 GPUs, one NIC each (1 GB/s: no cap binds): the CPU
-- decides the post overhead of a ring step across nodes, 2 us on AMD, 1 us
-- on Intel and by default (getNetOverhead), 3x with Simple; it raises the
-- intra-node steps, 2 (N - 1) - 2 (nodes - 1) = 4 of them
do
    local function two_nodes(cpu)
        return ps.cluster{ nodes = 2, gpus_per_node = 2, nics_per_node = 1,
            intra = { bandwidth = 100e9, latency = 0.6e-6 },
            inter = { bandwidth = 1e9, latency = 2.7e-6 },
            compute_capability = 80, cpu_vendor = cpu }
    end
    local amd, intel, none = two_nodes("amd"), two_nodes("intel"), two_nodes(nil)
    local T = 4 * 60 -- below Simple's plateau (64 bytes per rank and channel)
    local function t(c, p) return coll(c, "ring", p, T).time end
    H.near(t(amd, "ll") - t(intel, "ll"), 4 * (2.0 - 1.0) * us, 1e-6, "LL: AMD 2 us, Intel 1 us")
    H.near(t(intel, "ll") - coll(intel, "ring", "none", 2 * T).time, (6.6 + 4 * 0.4) * us, 1e-6,
        "LL: Intel")
    H.near(t(none, "ll"), t(intel, "ll"), 1e-12, "unknown CPU: as Intel")
    H.near(t(amd, "ll128") - t(intel, "ll128"), 4 * (2.0 - 1.9) * us, 1e-6, "LL128")
    H.near(t(amd, "simple") - t(intel, "simple"), 4 * (6.0 - 3.4) * us, 1e-6, "Simple: 6 us")
    -- the CPU picks llMaxBw across nodes: AMD 22.5 GB/s on 2 nodes, Intel 39
    local function fat(cpu)
        return ps.cluster{ nodes = 2, gpus_per_node = 2, nics_per_node = 1,
            intra = { bandwidth = 1000e9, latency = 0.6e-6 },
            inter = { bandwidth = 1000e9, latency = 2.7e-6 },
            compute_capability = 80, cpu_vendor = cpu }
    end
    local big = 2 ^ 26
    local ra, ri = coll(fat("amd"), "ring", "ll", big), coll(fat("intel"), "ring", "ll", big)
    H.near(ra.time - ri.time, 1.5 * big / 22.5e9 - 1.5 * big / 39e9 + 4 * us, 1e-6,
        "llMaxBw by CPU across nodes")
end
-- The tree's .92 caps NCCL's graph bandwidth (nChannels x bw, the bus
-- bandwidth a ring gets through the same channels), halved to algorithm
-- bandwidth on any number of nodes (tuning.cc). Two nodes of one GPU, one
-- 10 GB/s NIC each: the ring's bus bandwidth is 10 GB/s, so NCCL's tree
-- runs at .5 x .92 x 10 = 4.6 GB/s (below perChMaxTreeBw 23.6 on 2
-- nodes), although the simulated double binary tree (each node the root
-- of one tree and the leaf of the other) moves T/2 up and T/2 down per
-- direction, 10 GB/s at one wire byte. One chunk: 2 steps of a + (T w /
-- 2) / B with w = 10 / 4.6; latency NCCL's tree Simple base 8.4 us plus 2
-- network steps of 14 - 2.7 us (ppn 1: the tree's network latency).
do
    local c = ps.cluster{ nodes = 2, gpus_per_node = 1, nics_per_node = 1,
        intra = { bandwidth = 100e9, latency = 0.6e-6 },
        inter = { bandwidth = 10e9, latency = 2.7e-6 }, compute_capability = 80,
        cpu_vendor = "intel" }
    local T = 2 ^ 24
    local r = coll(c, "tree", "simple", T, { chunks = 1 })
    H.near(r.time, 2 * (2.7 * us + T / 2 / 4.6e9) + (8.4 + 2 * 11.3) * us, 1e-12,
        "2 nodes: tree at .92 x the ring's bus bandwidth / 2")
    H.near(r.predicted, r.time, 1e-12, "2 nodes: tree model")
end

-- auto ranks NCCL's tree with NCCL's treeCorrectionFactor as a floor
-- (core/coll/choose.c): on DGX A100 x2 at 16 MiB (factor LL128 .9) the
-- tree LL128's physical prediction is below the ring's, yet auto picks
-- ring/LL128 as NCCL's tuner does; at 64 MiB (LL128 .9, Simple .8) the
-- tree's Simple is physically faster than its LL128, yet auto runs the
-- tree with LL128, as NCCL's; `predicted` stays the physical time of the
-- pair picked. At 1 GiB (no factor) the tree's best protocol is the
-- physically fastest.
do
    local c = ps.cluster(ps.clusters.dgx("a100", 2))
    local function pred(algo, proto, b)
        return ps.collective{ cluster = c, op = "allreduce", algorithm = algo, protocol = proto,
            bytes = b, simulate = false }
    end
    local b = 2 ^ 24
    local ring, ll128 = pred("ring", "ll128", b), pred("tree", "ll128", b)
    H.check(ll128.predicted < ring.predicted,
        string.format("a100 x2 16 MiB: tree LL128 %.1f us below ring %.1f us",
            ll128.predicted / us, ring.predicted / us))
    local auto = pred("auto", "auto", b)
    H.eq(auto.algorithm .. "/" .. auto.protocol, "ring/ll128", "a100 x2 16 MiB: auto picks NCCL's pair")
    H.eq(auto.predicted, ring.predicted, "a100 x2 16 MiB: predicted is the ring's")
    b = 2 ^ 26
    local simple = pred("tree", "simple", b)
    ll128 = pred("tree", "ll128", b)
    H.check(simple.predicted < ll128.predicted,
        string.format("a100 x2 64 MiB: tree Simple %.1f us below LL128 %.1f us",
            simple.predicted / us, ll128.predicted / us))
    local tree = pred("tree", "auto", b)
    H.eq(tree.protocol, "ll128", "a100 x2 64 MiB: the tree's protocol is NCCL's")
    H.eq(tree.predicted, ll128.predicted, "a100 x2 64 MiB: the tree's predicted is LL128's")
    b = 2 ^ 30
    local best = math.huge
    for _, p in ipairs{ "ll", "ll128", "simple" } do
        best = math.min(best, pred("tree", p, b).predicted)
    end
    H.eq(pred("tree", "auto", b).predicted, best, "a100 x2 1 GiB: no factor, the fastest protocol")
end

-- NCCL's ring graph across A100 nodes has one channel per NIC, also when
-- two GPUs share a NIC, so the ring LL128 cap is 20 GB/s
-- (perChMaxRingLL128Bw, Ampere) x the NICs. ncclTopoCompute (search.cc,
-- NCCL 2.30.7 and 2.15.5) starts at the GPU-NIC path's 24 GB/s: each
-- channel takes 24 of one HDR NIC's 25, so 4 NICs give 4 x 24; at 12 GB/s
-- (tried: 12 / 24 > .49) 8 x 12 ties at 96 and ncclTopoCompareGraphs keeps
-- the first (it copies only on more nChannels x bw, or fewer hops); no
-- ncclTopoDupChannels below 25 GB/s. (connect.cc runs twice the graph's
-- channels, but tuning.cc caps by graphs[a]->nChannels.) At 8 GiB the
-- latency is 0.1% of the time: LL128's busbw is the cap (.92 x 25 GB/s x
-- NICs is above it).
do
    local f, b = 2 * 23 / 24, 2 ^ 33
    for _, n in ipairs{ 1, 2, 4, 8 } do
        local c = ps.cluster(ps.clusters.dgx("a100_40", 3, { nics_per_node = n,
                                                            cpu_vendor = "intel" }))
        local r = ps.collective{ cluster = c, op = "allreduce", algorithm = "ring",
            protocol = "ll128", bytes = b, simulate = false }
        H.near(b * f / r.predicted, n * 20e9, 3e-3,
            string.format("a100 x3, %d NICs: ring LL128 at %d channels x 20 GB/s", n, n))
        H.eq(r.channels, n, string.format("a100 x3, %d NICs: not duplicated", n))
    end
end

-- ncclTopoDupChannels (src/graph/search.cc, NCCL 2.30.7, since 2.18.3)
-- on Hopper: the search's 4 x 48 GB/s on 8 H100s with 4 NDR NICs (50
-- GB/s, NCCL's speed 48) is doubled to 8 x 24 (bwIntra >= 25, and not
-- both < 50 and > 4 channels), 8 NICs' 8 x 48 is not. tuning.cc, ring
-- LL128 on 2 nodes: busBw = min(nChannels x bw x .92, nChannels x
-- perChMaxRingLL128Bw 36.7) = min(8 x 24 x .92, 8 x 36.7) = 176.6 GB/s
-- in NCCL's own model; pipesim takes the .92 on its simulated links (4
-- NICs x 50 GB/s, two channels each) and NCCL's cap: min(.92 x 200, 8 x
-- 36.7) = 184 GB/s (one channel per NIC gave min(184, 4 x 36.7) = 146.8).
-- 8 NICs: min(.92 x 400, 8 x 36.7) = 293.6. At 8 GiB on 16 ranks (bus
-- factor 2 x 15/16) the latency is 0.1% of the time.
do
    local f, b = 2 * 15 / 16, 2 ^ 33
    for _, t in ipairs{ { nics = 4, ch = 8, bus = 184e9 }, { nics = 8, ch = 8, bus = 8 * 36.7e9 } } do
        local c = ps.cluster(ps.clusters.dgx("h100", 2, { nics_per_node = t.nics }))
        local r = ps.collective{ cluster = c, op = "allreduce", algorithm = "ring",
            protocol = "ll128", bytes = b, simulate = false }
        H.eq(r.channels, t.ch, string.format("h100 x2, %d NICs: %d channels", t.nics, t.ch))
        H.near(b * f / r.predicted, t.bus, 3e-3,
            string.format("h100 x2, %d NICs: ring LL128 at %.1f GB/s", t.nics, t.bus / 1e9))
    end
end
H.done()
