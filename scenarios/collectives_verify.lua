-- collectives_verify: every collective op and algorithm carries real data.
--
-- In data mode each rank holds a float32 buffer of bytes / 4 elements and
-- every simulated step moves and reduces real values in the order the
-- algorithm does; pipesim checks each rank's result against a float64
-- reduction of the inputs and fails the run on a wrong element. Here the
-- inputs are small integers, so every sum is exact: the script also checks
-- each output element itself and stops with an error on any mismatch.
--
-- Awkward cases: 37 and 3 elements (shards of unequal length, fewer
-- elements than ranks), 1, 3, 5 and 8 ranks (not powers of two), a
-- shuffled subset of the cluster's ranks, and the root being the last
-- listed rank. Hierarchical allreduce runs on 2 nodes x 4 GPUs. Prints one
-- line per (op, algorithm) with the cases that passed.
local ps = require "pipesim"

local ALGOS = {
    { "allreduce", { "ring", "tree", "binomial_tree", "double_binary_tree", "halving_doubling",
                       "direct" } },
    { "reduce_scatter", { "ring", "halving_doubling", "direct" } },
    { "allgather", { "ring", "halving_doubling", "direct" } },
    { "broadcast", { "binomial_tree", "pipeline", "scatter_allgather" } },
    { "reduce", { "binomial_tree" } },
}
local COUNTS = { 1, 3, 5, 8 }
local ELEMENTS = { 37, 3 }

local mesh = ps.cluster{ name = "mesh 8", ranks = 8,
                           link = { bandwidth = "25 GB/s", latency = "5 us" } }
local nodes = ps.cluster{ name = "2 nodes x 4 GPUs", nodes = 2, gpus_per_node = 4,
                            intra = { bandwidth = "300 GB/s", latency = "2 us" },
                            inter = { bandwidth = "400 Gb/s", latency = "5 us" } }

local function input(rank, i) return (rank + 1) * 100 + i % 11 end

-- shard k (from 0) of n elements over parts: first element, count
local function shard(n, parts, k)
    local q, r = n // parts, n % parts
    return k * q + math.min(k, r), q + (k < r and 1 or 0)
end

-- What listed rank k must hold at element e.
local function want(op, ranks, root, n, e)
    if op == "broadcast" then return input(root, e) end
    if op == "allgather" then
        for j = 1, #ranks do
            local lo, cnt = shard(n, #ranks, j - 1)
            if e >= lo and e < lo + cnt then return input(ranks[j], e) end
        end
    end
    local s = 0
    for _, r in ipairs(ranks) do s = s + input(r, e) end
    return s
end

local function check(op, algo, cluster, ranks, n)
    local root = ranks[#ranks]
    local r = ps.collective{ cluster = cluster, op = op, algorithm = algo,
                               bytes = 4 * n, ranks = ranks, root = root,
                               data = input, name = string.format("%s %s N=%d n=%d",
                                   op, algo, #ranks, n) }
    for k, rank in ipairs(ranks) do
        local lo, cnt = 0, n
        if op == "reduce_scatter" then lo, cnt = shard(n, #ranks, k - 1) end
        if op == "reduce" and rank ~= root then cnt = 0 end
        local out = r.outputs[k]
        if #out ~= cnt then
            error(string.format("%s %s on %d ranks: rank %d has %d elements, expected %d",
                op, algo, #ranks, rank, #out, cnt))
        end
        for e = lo, lo + cnt - 1 do
            local w = want(op, ranks, root, n, e)
            if out[e - lo + 1] ~= w then
                error(string.format("%s %s on %d ranks, %d elements: rank %d element %d: got %s, expected %s",
                    op, algo, #ranks, n, rank, e, out[e - lo + 1], w))
            end
        end
    end
end

print(string.format("%-15s %-19s %s", "op", "algorithm", "cases (ranks x elements)"))
local total = 0
for _, entry in ipairs(ALGOS) do
    local op, algos = entry[1], entry[2]
    for _, algo in ipairs(algos) do
        local cases = {}
        for _, N in ipairs(COUNTS) do
            -- a shuffled subset: 0, 3, 6, 1, 4, 7, 2, 5
            local ranks = {}
            for i = 0, N - 1 do ranks[#ranks + 1] = (3 * i) % 8 end
            for _, n in ipairs(ELEMENTS) do
                check(op, algo, mesh, ranks, n)
                cases[#cases + 1] = N .. "x" .. n
                total = total + 1
            end
        end
        print(string.format("%-15s %-19s pass  %s", op, algo, table.concat(cases, " ")))
    end
end
for _, ranks in ipairs{ { 0, 1, 2, 3, 4, 5, 6, 7 }, { 4, 5, 6, 7 } } do
    for _, n in ipairs(ELEMENTS) do
        check("allreduce", "hierarchical", nodes, ranks, n)
        total = total + 1
    end
end
print(string.format("%-15s %-19s pass  8x37 8x3 4x37 4x3 (2 nodes x 4 GPUs)",
    "allreduce", "hierarchical"))
-- NCCL's tree on whole nodes (chains inside, the double binary tree across)
-- and on one node (a chain), with a protocol (its wire bytes carry the same
-- elements)
for _, ranks in ipairs{ { 0, 1, 2, 3, 4, 5, 6, 7 }, { 4, 5, 6, 7 } } do
    for _, n in ipairs(ELEMENTS) do
        check("allreduce", "tree", nodes, ranks, n)
        total = total + 1
    end
end
print(string.format("%-15s %-19s pass  8x37 8x3 4x37 4x3 (2 nodes x 4 GPUs)",
    "allreduce", "tree"))

-- random inputs: the tolerance check |got - ref| <= N eps sum |x|
for _, algo in ipairs(ALGOS[1][2]) do
    ps.collective{ cluster = mesh, op = "allreduce", algorithm = algo,
                     bytes = 4 * 1001, verify = true, seed = 42, record = "summary" }
    total = total + 1
end
-- out of place (nccl-tests' alltoall and sendrecv): the receive buffers
-- are compared bit for bit with the senders' elements; alltoall's bytes
-- split into equal blocks, one per listed rank
for _, cl in ipairs{ mesh, nodes } do
    for _, case in ipairs{ { "alltoall", "direct" }, { "alltoall", "pairwise" },
                             { "sendrecv", "direct" } } do
        ps.collective{ cluster = cl, op = case[1], algorithm = case[2],
                         bytes = 4 * 8 * 5, verify = true, seed = 7,
                         name = string.format("%s %s on %s", case[1], case[2], cl.name) }
        total = total + 1
    end
end
print(string.format("%-15s %-19s pass  8x40 (mesh 8, 2 nodes x 4 GPUs)",
    "alltoall", "direct, pairwise"))
print(string.format("%-15s %-19s pass  8x40 (mesh 8, 2 nodes x 4 GPUs)",
    "sendrecv", "direct"))
print(string.format("%d collectives verified, every element exact", total))
