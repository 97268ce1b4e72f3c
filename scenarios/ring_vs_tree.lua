-- ring_vs_tree: where does a tree allreduce stop beating a ring?
--
-- Allreduce of 1 KiB to 1 GiB (x4 steps) with every allreduce algorithm on
-- 4, 8 and 64 ranks joined by dedicated 25 GB/s, 5 us links (a mesh, the
-- network of the textbook alpha-beta formulas) and on 4 DGX-like nodes x 8
-- GPUs (NVLink-class 300 GB/s, 2 us inside a node; 400 Gb/s, 5 us NICs, 8
-- per node, max-min fair sharing). For each topology it prints the times
-- (rows: sizes, columns: algorithms; * marks auto's choice among NCCL's
-- ring and tree) and the ring/tree crossover size, found twice: by
-- bisection on the simulated times and by solving the two cost models
-- (each is affine in the size between the two swept sizes around the
-- crossover: alpha terms + bytes x beta terms).
--
-- On a mesh every rank has N - 1 independent ports, so algorithms that
-- talk to many peers at once (direct, double_binary_tree) look better than
-- on real hardware, where a GPU has one NIC; the cluster shows the
-- contention. On the cluster the ring runs 8 channels, one per NIC, as
-- NCCL does, and beats the trees from a few MiB up. Runs are recorded at summary level; query them with
--   sqlite3 -header -column results/ring_vs_tree.db < results/queries/crossover.sql
-- `-D quick=1` (CI) runs a smaller sweep.
local ps = require "pipesim"

local quick = ps.args.quick
local started = os.clock()
local KiB = 1024

local ALGOS = { "ring", "tree", "binomial_tree", "double_binary_tree", "halving_doubling",
                  "direct", "hierarchical" }
local SHORT = { ring = "ring", tree = "tree", binomial_tree = "binomial",
                  double_binary_tree = "dbtree",
                  halving_doubling = "halv-doub", direct = "direct",
                  hierarchical = "hier" }

local sizes = {}
local step = quick and 16 or 4
local s = KiB
while s <= (quick and 64 * KiB * KiB or KiB * KiB * KiB) do
    sizes[#sizes + 1] = s
    s = s * step
end

local mesh = { bandwidth = "25 GB/s", latency = "5 us" }
local topologies = {}
for _, n in ipairs(quick and { 8 } or { 4, 8, 64 }) do
    topologies[#topologies + 1] = ps.cluster{
        name = n .. " ranks, mesh 25 GB/s 5 us", ranks = n, link = mesh }
end
topologies[#topologies + 1] = ps.cluster{
    name = quick and "2 nodes x 8 GPUs" or "4 nodes x 8 GPUs",
    nodes = quick and 2 or 4, gpus_per_node = 8, nics_per_node = 8,
    intra = { bandwidth = "300 GB/s", latency = "2 us" },
    inter = { bandwidth = "400 Gb/s", latency = "5 us" },
}

local runs = 0
local function allreduce(c, algo, bytes, record)
    runs = runs + 1
    return ps.collective{ cluster = c, op = "allreduce", algorithm = algo,
                            bytes = bytes, record = record or "summary",
                            name = c.name .. " " .. algo }
end

-- Smallest size in (lo, hi] where ring is not slower than tree, by
-- bisection on simulated times (tree wins at lo). Sizes step by 4 x ranks
-- bytes: with shards of unequal length a ring step takes as long as its
-- largest shard, so ring's time is not monotone at finer steps.
local function simulated_crossover(c, lo, hi)
    local function ring_wins(b)
        return allreduce(c, "ring", b, "none").time
            <= allreduce(c, "binomial_tree", b, "none").time
    end
    local unit = 4 * c.ranks
    lo, hi = lo // unit, -(-hi // unit)
    while hi - lo > 1 do
        local mid = (lo + hi) // 2
        if ring_wins(unit * mid) then hi = mid else lo = mid end
    end
    return unit * hi
end

-- Where the two cost models meet: each is a + b x bytes, so two sizes
-- give the lines and their intersection.
local function model_crossover(c, t1, t2)
    local r1, r2 = allreduce(c, "ring", t1, "none"), allreduce(c, "ring", t2, "none")
    local g1, g2 = allreduce(c, "binomial_tree", t1, "none"), allreduce(c, "binomial_tree", t2, "none")
    local rb = (r2.predicted - r1.predicted) / (t2 - t1)
    local gb = (g2.predicted - g1.predicted) / (t2 - t1)
    local ra, ga = r1.predicted - rb * t1, g1.predicted - gb * t1
    if rb == gb then return nil end
    return (ga - ra) / (rb - gb)
end

local function fmt_bytes(b)
    if not b then return "-" end
    return string.format("%s (%d B)", ps.bytes(b), math.floor(b + 0.5))
end

for _, c in ipairs(topologies) do
    print(string.format("\n== allreduce on %s (%d ranks, %s sharing)", c.name,
        c.ranks, c.sharing))
    local cols = {}
    for _, a in ipairs(ALGOS) do
        if a ~= "hierarchical" or c.gpus_per_node > 1 then cols[#cols + 1] = a end
    end
    local header = string.format("%-10s", "size")
    for _, a in ipairs(cols) do header = header .. string.format(" %12s", SHORT[a]) end
    print(header .. "   auto    best")
    local prev_tree, crossed
    for _, bytes in ipairs(sizes) do
        local auto = allreduce(c, "auto", bytes, "none").algorithm
        local line = string.format("%-10s", ps.bytes(bytes))
        local best, best_t, t = nil, math.huge, {}
        for _, a in ipairs(cols) do
            local r = allreduce(c, a, bytes)
            t[a] = r.time
            if r.time < best_t then best, best_t = a, r.time end
            line = line .. string.format(" %11s%s", ps.seconds(r.time), a == auto and "*" or " ")
        end
        print(line .. string.format("   %-6s  %s", SHORT[auto], SHORT[best]))
        if t.binomial_tree < t.ring then
            prev_tree = bytes
        elseif prev_tree and not crossed then
            crossed = { prev_tree, bytes }
        end
    end
    if crossed then
        local sim = simulated_crossover(c, crossed[1], crossed[2])
        local model = model_crossover(c, crossed[1], crossed[2])
        print(string.format("ring/tree crossover: simulated %s, cost models %s",
            fmt_bytes(sim), fmt_bytes(model)))
    else
        print("ring/tree crossover: none in this range")
    end
end

print(string.format("\n%d collectives simulated in %.2f s (CPU)", runs,
    os.clock() - started))
