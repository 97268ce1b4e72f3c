-- NCCL's protocols (core/coll/proto.c): wire bytes per payload byte and
-- the fixed latency from NCCL's tuner constants (src/graph/tuning.cc, NCCL
-- 2.30.7), auto's (algorithm, protocol) choice, and NCCL's tree
-- (coll_tree_build) against its closed form.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local function coll(c, algo, proto, bytes, extra)
    return ps.collective(F.with({ cluster = c, op = "allreduce", algorithm = algo, protocol = proto,
                                  bytes = bytes, record = "none" }, extra))
end

local us = 1e-6
-- DGX H100 x 2 without its compute capability: no bandwidth caps (below),
-- the protocols' efficiencies alone
local spec = ps.clusters.dgx("h100", 2) -- 2 nodes x 8 GPUs, Intel CPUs
spec.compute_capability = nil
local c = ps.cluster(spec)
local N, m = 16, 2
local intra, inter = 2 * (N - 1) - 2 * (m - 1), 2 * (m - 1)

-- LL puts 8 flag bytes beside every 8 data bytes (efficiency .5): the ring
-- moves twice the bytes and pays LL's base latency (6.6 us) once, and on
-- several nodes each intra-node step at least NCCL's network post
-- overhead, 1 us on Intel CPUs (getNetOverhead), 0.4 us over LL's 0.6
do
    local T = 1024 * 1024
    local none2 = coll(c, "ring", "none", 2 * T)
    local ll = coll(c, "ring", "ll", T)
    H.eq(ll.protocol, "ll")
    H.near(ll.time, none2.time + (6.6 + intra * 0.4) * us, 1e-9, "ll = none at 2T + 6.6 us")
    H.near(ll.predicted, none2.predicted + (6.6 + intra * 0.4) * us, 1e-9, "ll model")
    -- LL128: efficiency .92 (tuning.cc; 120 data bytes of a 128-byte
    -- line); base 14 us, and 1.3 us more than LL per NVLink step, 1.3 us
    -- per network step
    local T2 = 23 * 4 * 128 * 10 -- blocks of whole elements either way
    local none = coll(c, "ring", "none", T2 * 25 // 23)
    local ll128 = coll(c, "ring", "ll128", T2)
    H.near(ll128.time, none.time + (14 + intra * 1.3 + inter * 1.3) * us, 1e-9, "ll128")
    -- Simple: the payload alone; base 8.4 us, per step 3.4 - 0.6 us (NVLink;
    -- above the 3 us post overhead) and 14 - 2.7 us (network) over LL's;
    -- from 64 bytes per rank and channel (2 x 8 channels) NCCL's plateau,
    -- 1.4 x its latency (ncclTopoGetAlgoTime): + 0.4 (8.4 + 28 x 3.4 + 2 x 14)
    none = coll(c, "ring", "none", T)
    local simple = coll(c, "ring", "simple", T)
    local nccl = 8.4 + intra * 3.4 + inter * 14
    H.near(simple.time, none.time + (8.4 + intra * 2.8 + inter * 11.3 + 0.4 * nccl) * us, 1e-9,
        "simple")
    local small = 16 * 16 * 60 -- 60 bytes per rank and channel: no plateau
    H.near(coll(c, "ring", "simple", small).time,
        coll(c, "ring", "none", small).time + (8.4 + intra * 2.8 + inter * 11.3) * us, 1e-9,
        "simple below the plateau")
    -- NCCL's tree: efficiency .92, 2 ((ppn - 1) intra + log2(nodes) inter)
    -- steps, each charged its excess over the link's raw hop (ring LL's
    -- 0.6 and 2.7 us): NVLink 4.0 - 0.6, network 14 - 2.7
    local T3 = 23 * 2 ^ 16
    none = coll(c, "tree", "none", T3 * 25 // 23)
    simple = coll(c, "tree", "simple", T3)
    H.near(simple.time, none.time + (8.4 + 2 * (7 * 3.4 + 1 * 11.3)) * us, 1e-9, "tree simple")
end

-- auto: LL for tiny messages, a bandwidth protocol for large ones
do
    local r = coll(c, "auto", "auto", 8)
    H.eq(r.protocol, "ll", "auto at 8 B")
    r = coll(c, "auto", "auto", "1 GiB")
    H.eq(r.algorithm, "ring", "auto at 1 GiB")
    H.check(r.protocol ~= "ll", "auto at 1 GiB: " .. r.protocol)
    -- a fixed algorithm, the protocol auto
    H.eq(coll(c, "ring", "auto", 8).protocol, "ll")
    -- the choice is the cheapest prediction of all pairs
    local best = math.huge
    for _, a in ipairs{ "ring", "tree" } do
        for _, p in ipairs{ "ll", "ll128", "simple" } do
            local x = coll(c, a, p, "4 MiB").predicted
            if x < best then best = x end
        end
    end
    H.near(coll(c, "auto", "auto", "4 MiB").predicted, best, 1e-12, "auto = min")
    -- no protocol: today's model
    H.eq(coll(c, "ring", nil, 8).protocol, "none")
end

-- NCCL's tree on 4 nodes x 8 GPUs, one chunk: inside a node a chain of 7
-- hops, across nodes NCCL's binary tree over 4 nodes (0 <- 2 <- {1, 3};
-- tree 1 its mirror, 3 <- 1 <- {2, 0}), so 2H = 2 (7 + 2) steps. NCCL
-- runs it on every channel (one per NIC, 8 here): channel c's chains start
-- at local c, its tree 0 leaves the node through NIC c and its tree 1
-- through NIC c - 1, each tree on T / 2C of the array. With NVLink
-- bandwidth out of the way (1e18 B/s) every step pays its latency, and the
-- inter-node ones T / 2C over a NIC: node 2's NIC c receives channel c's
-- tree 0 from two children at once (T/2C at B/2) while sending channel
-- c + 1's tree 1 up (node 2 is a leaf there), then forwards to node 0
-- (T/2C at B); the way down is the mirror. So 2 (7 a_in + 2 a_out) +
-- 6 (T/2C) / B = 14 a_in + 4 a_out + 3T/(CB): NCCL's latency formula
-- 2((ppn - 1) a_in + log2(nodes) a_out) plus the bandwidth term. Until the
-- tree had channels (issue 14) it used 2 NICs of 8: 3T/B.
do
    local a_in, a_out, B, T, C = 2e-6, 5e-6, 50e9, 1024 * 1024, 8
    local c4 = ps.cluster{ nodes = 4, gpus_per_node = 8, nics_per_node = 8,
        intra = { bandwidth = 1e18, latency = a_in }, inter = { bandwidth = B, latency = a_out } }
    local r = coll(c4, "tree", nil, T, { chunks = 1 })
    H.eq(r.channels, C, "tree channels")
    H.near(r.time, 14 * a_in + 4 * a_out + 3 * T / (C * B), 1e-6, "tree on 4 x 8 = closed form")
    H.near(r.predicted, r.time, 1e-6, "tree model on 4 x 8")
    -- 4 NICs per node: 4 channels, each NIC still one channel's tree 0 and
    -- another's tree 1
    local c4n = ps.cluster{ nodes = 4, gpus_per_node = 8, nics_per_node = 4,
        intra = { bandwidth = 1e18, latency = a_in }, inter = { bandwidth = B, latency = a_out } }
    r = coll(c4n, "tree", nil, T, { chunks = 1 })
    H.eq(r.channels, 4, "tree channels, 4 NICs")
    H.near(r.time, 14 * a_in + 4 * a_out + 3 * T / (4 * B), 1e-6, "tree on 4 x 8, 4 NICs")
    -- one chunk: the pipelined tree (the default, 8 slots) is the lockstep
    -- one (slots = 1)
    local eight = coll(c4, "tree", nil, T, { chunks = 1 })
    H.eq(eight.slots, 8, "tree default slots")
    local one = coll(c4, "tree", nil, T, { chunks = 1, slots = 1 })
    H.eq(one.slots, 1)
    H.near(one.time, eight.time, 1e-6, "one chunk: pipelined = lockstep")
    -- lockstep (slots = 1): more chunks, less time; the model picks the
    -- count and is the simulation's time
    local big = 256 * T
    r = coll(c4, "tree", nil, big, { chunks = 1, slots = 1 })
    local auto_k = coll(c4, "tree", nil, big, { slots = 1 })
    H.check(auto_k.chunks > 1 and auto_k.time < r.time, "chunks " .. auto_k.chunks)
    H.near(auto_k.predicted, auto_k.time, 1e-6, "chunked tree model")
    -- pipelined: NCCL's chunks (Simple's 512 KiB without a protocol, on
    -- each of the 2C trees' T / 2C: calcCollChunking, src/enqueue.cc), and
    -- the model within 7 % of the simulation (core/coll/tree.c: the fill
    -- at each step's shares, then the slowest flow's pace)
    local pipe = coll(c4, "tree", nil, big)
    H.eq(pipe.chunks, big / (2 * C) / 2 ^ 19, "NCCL's Simple chunks")
    H.near(pipe.predicted, pipe.time, 0.07, "pipelined tree model")
    -- latency alone (no bandwidth term): a chunk pays the hops on its way,
    -- leaf to root to leaf, 2 (7 a_in + 2 a_out) for any count up to the 8
    -- slots, where lockstep pays every step's latency, (k + 2H - 1) steps;
    -- beyond 8 chunks a connection waits for a slot a trip (5 us) per 8
    local lat = ps.cluster{ nodes = 4, gpus_per_node = 8, nics_per_node = 8,
        intra = { bandwidth = 1e18, latency = a_in }, inter = { bandwidth = 1e18, latency = a_out } }
    for _, k in ipairs{ 1, 4, 8, 32 } do
        local p = coll(lat, "tree", nil, big, { chunks = k })
        local want = 14 * a_in + 4 * a_out + (math.ceil(k / 8) - 1) * a_out
        H.near(p.time, want, 1e-4, "pipelined tree latency, " .. k .. " chunks")
        H.near(p.predicted, want, 1e-4, "pipelined tree model latency, " .. k .. " chunks")
    end
    -- lockstep, 8 chunks: 8 + 2H - 1 = 25 steps, step s running the hops
    -- of offsets s - 7 .. s; the inter-node ones are offsets 7 .. 10, so
    -- steps 7 .. 17 pay a_out, the other 14 a_in
    H.near(coll(lat, "tree", nil, big, { chunks = 8, slots = 1 }).time, 14 * a_in + 11 * a_out,
        1e-4, "lockstep tree latency, 8 chunks")
    -- the channels' slices reduce to the right sums, also when they are
    -- uneven or smaller than the chunks
    for _, n in ipairs{ 1003, 37, 5 } do
        H.eq(coll(c4, "tree", nil, 4 * n, { verify = true }).verified, true, "tree data " .. n)
        H.eq(coll(c4, "tree", nil, 4 * n, { verify = true, chunks = 3 }).verified, true,
            "tree data, 3 chunks " .. n)
    end
    -- one node: the chain alone, 2 (g - 1) steps
    local c1 = ps.cluster{ nodes = 1, gpus_per_node = 8,
        intra = { bandwidth = 1e18, latency = a_in }, inter = { bandwidth = B, latency = a_out } }
    H.near(coll(c1, "tree", nil, 8, { chunks = 1 }).time, 14 * a_in, 1e-6, "chain on one node")
end

-- slots = 1 is the lockstep tree of before the pipelined one: the times,
-- predictions and chunk counts main 09ee617 gave on DGX x4 with LL128
do
    local old = {
        a100 = { { 2 ^ 20, 9.8145288389513106e-05, 9.8145288389513092e-05, 2 },
                 { 2 ^ 22, 0.00017633595505617971, 0.00017633586849771118, 9 },
                 { 2 ^ 26, 0.0012708192059925094, 0.0012708177898679285, 38 } },
        h100 = { { 2 ^ 20, 8.600404846225538e-05, 8.6004048462255353e-05, 2 },
                 { 2 ^ 22, 0.0001387637576887232, 0.00013876369857542271, 7 },
                 { 2 ^ 26, 0.00080036430568499546, 0.00080036473837452181, 29 } },
    }
    for g, rows in pairs(old) do
        local cl = ps.cluster(ps.clusters.dgx(g, 4))
        for _, w in ipairs(rows) do
            local r = coll(cl, "tree", "ll128", w[1], { slots = 1 })
            local what = g .. " x4 lockstep tree at " .. w[1]
            H.near(r.time, w[2], 1e-12, what)
            H.near(r.predicted, w[3], 1e-12, what .. ", model")
            H.eq(r.chunks, w[4], what .. ", chunks")
        end
    end
end

-- the pipelined tree (the default) against its model on DGX clusters:
-- on 2 nodes within 15 % (measured: the model 4-15 % slower), on 4 and 8
-- nodes within 6 % (measured: -4 to +6 %, also at 64 MiB on 8 nodes,
-- left out for its run time; at 64 MiB, 59 chunks, the simulation was
-- 14-20 % slower while a down lane sent a chunk to one child after the
-- other: now each child has its own connection, as in NCCL, so the
-- children's sends of a step go on together), and faster than lockstep
do
    for _, g in ipairs{ "a100", "h100" } do
        for _, row in ipairs{ { 2, { 2 ^ 20, 2 ^ 22, 2 ^ 24 } }, { 4, { 2 ^ 20, 2 ^ 22, 2 ^ 24, 2 ^ 26 } },
                              { 8, { 2 ^ 22 } } } do
            local n, sizes = row[1], row[2]
            local cl = ps.cluster(ps.clusters.dgx(g, n))
            for _, b in ipairs(sizes) do
                local r = coll(cl, "tree", "ll128", b)
                local what = string.format("%s x%d pipelined tree at %d", g, n, b)
                H.near(r.predicted, r.time, n == 2 and 0.15 or 0.06, what)
                if b < 2 ^ 26 then
                    H.check(r.time < coll(cl, "tree", "ll128", b, { slots = 1 }).time,
                        what .. " < lockstep")
                end
            end
        end
    end
end

-- the pipelined tree on odd shapes (3 and 5 nodes, 2 and 4 GPUs, 1 NIC to
-- one per GPU; a head with a chain child and two node children sends to
-- three peers from one lane): no deadlock, and the data reduce right
do
    for _, nodes in ipairs{ 3, 5 } do
        for _, g in ipairs{ 2, 4 } do
            for _, nics in ipairs{ 1, g } do
                local cl = ps.cluster{ nodes = nodes, gpus_per_node = g, nics_per_node = nics,
                    intra = { bandwidth = "300 GB/s", latency = "2 us" },
                    inter = { bandwidth = "25 GB/s", latency = "5 us" } }
                for _, p in ipairs{ "ll128", "simple" } do
                    local r = coll(cl, "tree", p, 4 * 1003, { verify = true })
                    H.eq(r.verified, true, string.format("tree %s on %d x %d, %d NICs", p, nodes, g, nics))
                    H.eq(r.slots, 8)
                end
            end
        end
    end
end

-- NVLS on one DGX H100 node: the direct pattern (2 steps, one hop each)
-- carrying T + T/N per GPU each way at NCCL's nvlsEfficiency 0.85, plus
-- NCCL's NVLS latency (25 us)
do
    local c1 = ps.cluster(ps.clusters.dgx("h100", 1))
    H.eq(c1.nvls, true)
    local T, n, B, a = 64 * 1024 * 1024, 8, 370e9, 0.6e-6
    local r = coll(c1, "nvls", nil, T)
    H.eq(r.protocol, "simple", "nvls runs simple")
    H.near(r.time, 2 * a + T * (n + 1) / (n * 0.85 * B) + 25e-6, 1e-9, "nvls closed form")
    H.near(r.predicted, r.time, 1e-9, "nvls model")
    H.eq(coll(c1, "auto", "auto", T).algorithm, "nvls", "auto takes nvls at 64 MiB")
    H.eq(coll(c1, "auto", "auto", 8).algorithm ~= "nvls", true, "not at 8 B")
    -- not a candidate where it does not apply
    H.eq(coll(ps.cluster(ps.clusters.dgx("a100", 1)), "auto", "auto", T).algorithm, "ring")
    H.eq(coll(c, "auto", "auto", T).algorithm ~= "nvls", true, "2 nodes: no nvls")
    H.raises(function() coll(c1, "nvls", "ll", T) end,
        "allreduce: nvls runs with the simple protocol only, got 'll'")
    H.raises(function() coll(c, "nvls", nil, T) end,
        "allreduce: algorithm 'nvls' runs on 3 or more GPUs of one node (NCCL needs more "
        .. "than 2, and uses NVLS across nodes only with CollNet); 16 ranks are not that")
    -- part of a node (ncclNvlsInit: more than 2 GPUs), at the same per-GPU
    -- closed form with N = 4
    local r4 = coll(c1, "nvls", nil, T, { ranks = { 0, 2, 4, 6 } })
    H.eq(r4.algorithm, "nvls")
    H.near(r4.time, 2 * a + T * 5 / (4 * 0.85 * B) + 25e-6, 1e-9, "nvls on 4 GPUs of a node")
    H.raises(function() coll(c1, "nvls", nil, T, { ranks = { 0, 1 } }) end,
        "2 ranks are not that")
end

-- bad input
H.raises(function() coll(c, "ring", "ll64", 8) end,
    "field 'protocol': unknown protocol 'll64' (expected ll, ll128, simple, auto, none)")
H.raises(function() coll(c, "halving_doubling", "ll", 8) end,
    "allreduce: protocol 'll' applies to ring, tree and nvls (NCCL's algorithms), not halving_doubling")
H.done()
