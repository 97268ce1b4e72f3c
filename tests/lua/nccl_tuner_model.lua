-- NCCL's own performance model of allreduce, reproduced as a reference for
-- pipesim's (README "Against NCCL"): ncclTopoTuneModel and
-- ncclTopoGetAlgoTime of src/graph/tuning.cc, NCCL 2.30.7 (NVIDIA/nccl
-- commit 5067397), fed with the graphs NCCL's topology search
-- (src/graph/search.cc, ncclTopoCompute) finds on DGX A100 and DGX H100.
-- Pure Lua, no pipesim: predicted microseconds per (algorithm, protocol),
-- NCCL's pick, and the ring/tree crossover size.
local M = {}

-- ncclTunerConstantsDefaults (tuning.cc), microseconds, [LL, LL128, Simple]
local BASE = { tree = { 6.8, 14.0, 8.4 }, ring = { 6.6, 14.0, 8.4 } }
local HW_NVL = { tree = { 0.6, 1.25, 4.0 }, ring = { 0.6, 1.9, 3.4 } }
local HW_NET = { tree = { 5.0, 8.5, 14 }, ring = { 2.7, 4.0, 14.0 } }
-- llMaxBws[index1][index2]: index1 the compute capability on one node,
-- else the CPU vendor (0 Intel, 1 AMD); index2 nodes 1 / 2 / more
local LL_MAX = { { 39.0, 39.0, 20.4 }, { 87.7, 22.5, 19.0 },
                 { 141.0, 45.0, 35.0 }, { 282.0, 90.0, 70.0 } }
-- per channel caps [compCapIndex][index2], compCapIndex 1 Volta, 2 Ampere,
-- 3 Hopper, 4 Blackwell (Lua arrays from 1)
local RING_LL128 = { { 20, 20, 20 }, { 20, 20, 20 }, { 36.7, 36.7, 36.7 }, { 40, 40, 40 } }
local TREE_LL128 = { { 20, 20, 20 }, { 20, 20, 20 }, { 36.7, 36.7, 29.0 },
                     { 55.6, 31.67, 20.0 } }
local TREE_MAX = { { 26.5, 18.5, 10.0 }, { 24.0, 23.6, 17.8 }, { 38.7, 41.4, 36.0 },
                   { 70.0, 42.8, 24.0 } }
-- treeCorrectionFactor[protocol][log2i(bytes >> 6)], 64 B .. 256 MB
local TREE_CORR = {
    { 1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0,
      1.0, 1.0, 1.0, 1.0 },
    { 1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9,
      .9, 1.0, 1.0, 1.0 },
    { .9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8,
      .9, .9, .9 },
}
M.PROTOS = { "ll", "ll128", "simple" }

-- The systems: what ncclTopoCompute finds (search.cc) and the CPU that
-- picks llMaxBw and the network post overhead (getNetOverhead: Intel 1 us,
-- AMD 2 us). The ring and the tree graph (pattern BALANCED_TREE, which
-- the search keeps when the first tree it finds has as many channels as
-- the ring: NCCL 2.19.4 on an 8-GPU, 8-NIC H100 system prints "Pattern 4,
-- nChannels 12, bw 30/30" and "Pattern 1, nChannels 12, bw 30/30", NVIDIA/nccl
-- issue #1197) are alike: nChannels x bw GB/s per channel.
--   One node (speedArrayIntra, NVLink totalBw 12 x SM80_NVLINK_BW 20.0 =
--   240 for A100, 18 x SM90_NVLINK_BW 20.6 = 370.8 for H100, topo.h): A100
--   6 x 40 reaches totalBw and is duplicated (ncclTopoDupChannels, bwIntra
--   >= 25) to 12 x 20; H100 6 x 60 (the most of sm90SpeedArrayIntra's 60
--   that fit 370.8) duplicated (bwIntra >= 50) to 12 x 30.
--   Several nodes (speedArrayInter from maxBw, the GPU-NIC PCIe path: Gen4
--   x16 24 GB/s on A100, Gen5 48 on H100; each channel takes bwInter of one
--   NIC, HDR 25 / NDR 50 GB/s, so 8 NICs carry 8 channels): A100 8 x 24,
--   H100 8 x 48 (NCCL 2.28.9 on 2 x 8 H200 with 8 x 400G NICs prints
--   "Pattern 4, crossNic 2, nChannels 8, bw 48.000000/48.000000, type
--   NVL/PIX", weiziyang.wiki "大模型 GPU 集合通信学习实践"); not
--   duplicated (bwIntra < 25, resp. < 50 with more than 4 channels).
--   latencyInter: the IB plugin's (0).
M.SYSTEMS = {
    a100 = { cc = 2, amd = true, one = { ch = 12, bw = 20 }, multi = { ch = 8, bw = 24 } },
    h100 = { cc = 3, amd = false, one = { ch = 12, bw = 30 }, multi = { ch = 8, bw = 48 } },
}

local function log2i(x)
    local k = -1
    while x >= 1 do
        x = x // 2
        k = k + 1
    end
    return k
end

-- bandwidth (GB/s, algorithm bandwidth as NCCL stores it) and latency (us)
-- of (algo, proto p = 1..3) for allreduce on `nodes` x `ppn` ranks
function M.tune(sys, nodes, ppn, algo, p)
    local s = M.SYSTEMS[sys]
    local n = nodes * ppn
    local g = nodes == 1 and s.one or s.multi
    local i2 = nodes <= 2 and nodes or 3
    local i1 = nodes == 1 and s.cc or (s.amd and 2 or 1)
    local llmax = LL_MAX[i1][i2]
    local nsteps = 2 * (n - 1)
    local bus = g.ch * g.bw -- bwIntra on <= 2 nodes, bwInter beyond: equal here
    if algo == "ring" and p == 1 then bus = math.min(llmax, bus * .5) end
    if algo == "ring" and p == 2 then
        bus = math.min(bus * 0.92, g.ch * RING_LL128[s.cc][i2])
    end
    if algo == "tree" then
        bus = math.min(bus * .92, g.ch * TREE_MAX[s.cc][i2])
        if p == 1 then bus = math.min(bus / 3.8, llmax) end
        if p == 2 then
            bus = math.min(bus * (nodes == 1 and 7 / 9 or 120 / 128), g.ch * TREE_LL128[s.cc][i2])
        end
    end
    local bw = bus * (algo == "ring" and n / nsteps or .5)
    local lat = BASE[algo][p]
    local intra = HW_NVL[algo][p]
    local inter = (ppn == 1 and HW_NET.tree[p] or HW_NET[algo][p]) -- + latencyInter (0)
    if algo == "ring" then
        local over = 0
        if nodes > 1 then
            over = s.amd and 2.0 or 1.0
            if p == 3 then over = over * 3 end
        end
        intra = math.max(intra, over)
        local ninter = nodes == 1 and 0 or 2 * (nodes - 1)
        lat = lat + (nsteps - ninter) * intra + ninter * inter
    else
        lat = lat + 2 * ((ppn - 1) * intra + log2i(nodes) * inter)
    end
    return bw, lat, g
end

-- ncclTopoGetAlgoTime: microseconds for `bytes`
function M.time(sys, nodes, ppn, algo, p, bytes)
    local bw, lat, g = M.tune(sys, nodes, ppn, algo, p)
    local ls = log2i(bytes // 64)
    if algo == "tree" and ls >= 0 and ls < 23 then bw = bw * TREE_CORR[p][ls + 1] end
    -- the ring Simple plateau; comm->nChannels is the search's channels
    -- doubled (connect.cc duplicates rings and trees)
    if algo == "ring" and p == 3 and nodes > 1 and bytes / (2 * g.ch * nodes * ppn) >= 64 then
        lat = lat * 1.4
    end
    return lat + bytes / (1000 * bw)
end

-- the best protocol of algo at `bytes`: time, protocol name
function M.best(sys, nodes, ppn, algo, bytes)
    local bt, bp = math.huge, nil
    for p = 1, 3 do
        local t = M.time(sys, nodes, ppn, algo, p, bytes)
        if t < bt then bt, bp = t, M.PROTOS[p] end
    end
    return bt, bp
end

-- The ring/tree crossover of a model: the first size (bytes, a multiple
-- of 4) at which `ring(bytes)` is at or below `tree(bytes)` when tree won
-- below it: a scan up a 2^(1/8) grid from 8 B to `hi`, then bisection in
-- the interval where it changed. nil when ring wins at 8 B, math.huge
-- when tree still wins at hi.
function M.crossover(ring, tree, hi)
    hi = hi or 2 ^ 34
    if ring(8) <= tree(8) then return nil end
    local a = 8
    while true do
        local b = math.floor(a * 2 ^ (1 / 8) / 4 + 1) * 4
        if b > hi then return math.huge end
        if ring(b) <= tree(b) then
            while b - a > 4 do
                local m = math.floor((a + b) / 8) * 4
                if ring(m) > tree(m) then a = m else b = m end
            end
            return b
        end
        a = b
    end
end

-- NCCL's ring/tree crossover for sys on nodes x ppn (best protocol of each)
function M.nccl_crossover(sys, nodes, ppn)
    return M.crossover(function(b) return (M.best(sys, nodes, ppn, "ring", b)) end,
        function(b) return (M.best(sys, nodes, ppn, "tree", b)) end)
end

return M
