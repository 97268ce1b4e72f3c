-- Data parallelism with gradient sync: hand-computed step times, overlap,
-- exposed communication, ZeRO-1 memory, placement, bad input.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local alpha, beta = 1e-3, 1e9 -- 1 ms, 1 GB/s per direction
local function mesh(n) return F.mesh(n, beta, alpha) end
-- ring allreduce on 2 ranks: 2(N-1)(a + T/(N b)), plus the protocol's
-- fixed latency that a gradient-sync bucket is charged as a delay on the
-- communication lane (core/coll/coll.c coll_append, core/coll/proto.c
-- coll_proto_overhead), from NCCL 2.30.7 src/graph/tuning.cc
-- (ncclTunerConstantsDefaults, ncclTopoTuneModel, ncclTopoGetAlgoTime).
-- At these sizes auto picks ring Simple. A mesh rank is its own node
-- (ppn = 1), so both of the 2(N - 1) = 2 steps cross nodes and pay NCCL's
-- network hop, the tree's figure when ppn = 1 ("latencies are fully
-- exposed"): Simple 14.0 us, of which the link's share is ring LL's 2.7
-- (the raw hop the simulated links stand for); baseLatency 8.4 us; and
-- the ring plateau of a Simple allreduce across nodes, x 1.4 on NCCL's
-- latency 8.4 + 2 x 14.0 once every rank's share of a channel is >= 64 B.
local LAT_SIMPLE = (8.4 + 2 * (14.0 - 2.7) + 0.4 * (8.4 + 2 * 14.0)) * 1e-6 -- 45.56 us
local function ring2(bytes) return 2 * (alpha + bytes / (2 * beta)) end
local function sync2(bytes) return ring2(bytes) + LAT_SIMPLE end

-- 1. One bucket, no overlap: the step grows by exactly one allreduce.
-- Two stages, free pipeline transfers (out_bytes 0), forward 1 s, backward
-- 2 s; each stage holds 1e8 parameters = 2e8 gradient bytes in one bucket.
do
    local layers = {}
    for i = 1, 2 do layers[i] = { fwd_time = 1, params = 1e8 } end
    local m = 4
    local r = ps.run{ cluster = mesh(4), layers = layers, stages = 2, microbatches = m,
                        dp = 2, grad_sync = { bucket = "1 GB", first_bucket = "1 GB",
                          algorithm = "ring", protocol = "auto", overlap = false }, record = "none" }
    -- the same pipeline alone (its 0-byte transfers still pay the latency)
    local alone = ps.run{ cluster = mesh(4), layers = layers, stages = 2,
                            microbatches = m, record = "none" }
    local c = sync2(2e8)
    H.near(r.makespan, alone.makespan + c, 1e-9, "step = pipeline + allreduce")
    -- stage 0 finishes its compute last and waits the whole allreduce
    H.near(r.exposed_comm[1], c, 1e-9, "stage 0 exposed")
    H.near(r.exposed_comm[3], c, 1e-9, "replica 1 stage 0 exposed")
    H.eq(r.dp, 2)
    H.eq(r.rank, { 0, 2, 1, 3 }) -- dp_inner: replicas of a stage adjacent
    H.eq(#r.peak_memory, 4)
    H.eq(r.closed_form_bubble, nil)
end

-- 2. Overlap with 4 buckets: only the tail is exposed. One stage, one
-- microbatch: F 2 s, then 4 layers' backward of 1 s each, one bucket per
-- layer (2e8 bytes each).
local function overlap_case(bytes_per_layer)
    local layers = {}
    for i = 1, 4 do layers[i] = { fwd_time = 0.5, params = bytes_per_layer / 2 } end
    return ps.run{ cluster = mesh(2), layers = layers, stages = 1, microbatches = 1,
                     dp = 2, grad_sync = { bucket = bytes_per_layer,
                       first_bucket = bytes_per_layer, algorithm = "ring", protocol = "auto" },
                     record = "none" }
end
do
    -- c = 0.5 s (+ the protocol's latency) < 1 s per layer: each bucket
    -- finishes before the next is ready; only the last one shows: step =
    -- 2 + 4 + c
    local g = (0.5 - 2 * alpha) * beta
    H.near(ring2(g), 0.5, 1e-12)
    local c = sync2(g)
    local r = overlap_case(g)
    H.near(r.makespan, 2 + 4 + c, 1e-9, "overlap hides all but the tail")
    H.near(r.exposed_comm[1], c, 1e-9)
    -- c = 1.5 s > 1 s: buckets queue on the link; the first starts at 2 + 1
    -- and the others follow back to back: step = 2 + 1 + 4c
    g = (1.5 - 2 * alpha) * beta
    c = sync2(g)
    r = overlap_case(g)
    H.near(r.makespan, 2 + 1 + 4 * c, 1e-9, "queued buckets")
    H.near(r.exposed_comm[1], 1 + 4 * c - 4, 1e-9)
end

-- 3. Overlap never loses to no overlap; with a free network dp changes
-- nothing and the closed form holds.
do
    local layers = {}
    for i = 1, 8 do layers[i] = { fwd_time = 0.25, params = 5e7, out_bytes = 1e6 } end
    local base = { cluster = mesh(8), layers = layers, stages = 4, microbatches = 8,
                     dp = 2, record = "none" }
    local on = ps.run(base)
    base.grad_sync = { overlap = false }
    local off = ps.run(base)
    H.check(on.makespan <= off.makespan, "overlap helps")
    H.check(off.exposed_comm[1] > on.exposed_comm[1], "less exposed with overlap")
    local free = ps.run{ layers = layers, stages = 4, microbatches = 8, dp = 2,
                           record = "none" }
    -- the free network moves the buckets in no time, and with no NCCL
    -- hardware the collectives run without a protocol (one rule for every
    -- collective, core/par/pass.h par_protocol): the step is the closed
    -- form's. NCCL's software latency is asked for explicitly: auto picks
    -- ring LL there, baseLatency 6.6 us plus 2 network steps of the tree's
    -- LL hop (ppn = 1) 5.0 us less the link's 2.7 (tuning.cc, as above),
    -- once, for the last bucket of stage 0
    H.near(free.makespan, 1.5 * 11, 1e-12, "a free network: no protocol latency")
    H.near(free.closed_form_bubble, 3 / 11)
    local nccl = ps.run{ layers = layers, stages = 4, microbatches = 8, dp = 2,
                           grad_sync = { protocol = "auto" }, record = "none" }
    H.near(nccl.makespan, 1.5 * 11 + (6.6 + 2 * (5.0 - 2.7)) * 1e-6)
    -- on textbook links the default gradient sync is the textbook ring: no
    -- protocol's latency or wire overhead
    local layers2 = { { fwd_time = 1, params = 1e8 }, { fwd_time = 1, params = 1e8 } }
    local tb = ps.run{ cluster = mesh(4), layers = layers2, stages = 2, microbatches = 4,
                         dp = 2, grad_sync = { bucket = "1 GB", first_bucket = "1 GB",
                           algorithm = "ring", overlap = false }, record = "none" }
    local alone = ps.run{ cluster = mesh(4), layers = layers2, stages = 2, microbatches = 4,
                            record = "none" }
    H.near(tb.makespan, alone.makespan + ring2(2e8), 1e-9, "textbook links: the ring alone")
end

-- 4. ZeRO-1 divides optimizer state by d: 2 + 2 + 12/d bytes per param.
do
    local layers = { { fwd_time = 1, params = 1e9 }, { fwd_time = 1, params = 1e9 } }
    for _, d in ipairs{ 2, 4 } do
        local r = ps.run{ cluster = mesh(2 * d), layers = layers, stages = 2,
                            microbatches = 2, dp = d, zero = 1, record = "none" }
        H.near(r.static_memory[1], 1e9 * (2 + 2 + 12 / d))
        local plain = ps.run{ cluster = mesh(2 * d), layers = layers, stages = 2,
                                microbatches = 2, dp = d, record = "none" }
        H.near(plain.static_memory[1], 16e9)
        -- reduce-scatter + all-gather move as much as one allreduce (ring)
        H.check(r.makespan > 6, "zero still syncs")
    end
end

-- 5. Placement: pp_inner puts a replica's stages on adjacent ranks.
do
    local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
    local r = ps.run{ cluster = mesh(4), layers = layers, stages = 2, microbatches = 2,
                        dp = 2, placement = "pp_inner", record = "none" }
    H.eq(r.rank, { 0, 1, 2, 3 })
    r = ps.run{ cluster = mesh(4), layers = layers, stages = 2, microbatches = 2,
                  dp = 2, ranks = { 3, 2, 1, 0 }, record = "none" }
    H.eq(r.rank, { 3, 2, 1, 0 })
end

-- 6. Recorded: exposed communication per stage and rank, dp in run.
do
    local layers = { { fwd_time = 1, params = 1e6 }, { fwd_time = 1, params = 1e6 } }
    local r = ps.run{ cluster = mesh(4), layers = layers, stages = 2,
                        microbatches = 2, dp = 2, name = "dp recorded" }
    H.eq(math.type(r.id), "integer", "recorded")
    H.eq(r.dp, 2, "dp in the result")
    -- one exposed figure per rank (p * dp), the replicas alike, each rank
    -- waiting on its own bucket's ring
    H.eq(#r.exposed_comm, 4, "exposed per rank")
    H.eq(r.exposed_comm[3], r.exposed_comm[1], "replica 1's stage 0 as replica 0's")
    H.eq(r.exposed_comm[4], r.exposed_comm[2], "replica 1's stage 1 as replica 0's")
    H.check(r.exposed_comm[1] > 0 and r.exposed_comm[2] > 0, "both stages wait on their sync")
end

-- 8. A straggler replica delays the ring by its lateness, no more. On a
-- cluster (max-min fair sharing) of N one-GPU nodes, replica 2 computes at
-- half speed (F 1 s + B 2 s take 6 s, not 3: it is d = 3 s late). The
-- others' ring steps that need none of its data run ahead (rank 2 + k
-- does its first k steps, NCCL's slots let a sender run ahead), so when
-- rank 2 arrives its receives are there and it posts k steps' sends at
-- once. Those are one channel's chunks, which leave in order (net/net.h
-- net_start_conn, NCCL's per-peer FIFO, prims_simple.h): the first reaches
-- rank 3 after one transfer's time and the ring is pipelined again from
-- there; the dependency chain wraps around the ring (2(N - 1) >= N steps),
-- so every step still pays tau + a and the sync ends exactly d after the
-- straggler-free one: makespan + 3 s. Sharing the link among the k
-- sends instead (the bug) delivered them all together after k transfers'
-- time at every hop: +3.6 s at N = 4, +4.75 s at N = 8 (allreduce).
do
    for _, N in ipairs{ 4, 8 } do
        for _, zero in ipairs{ 0, 1 } do
            local function step(faults)
                local c = ps.cluster{ nodes = N, gpus_per_node = 1,
                    intra = { bandwidth = 1e12, latency = 0 },
                    inter = { bandwidth = beta, latency = alpha } }
                return ps.run{ cluster = c, layers = { { fwd_time = 1, params = 1e8 } },
                    stages = 1, microbatches = 1, dp = N, zero = zero,
                    grad_sync = { bucket = "1 GB", first_bucket = "1 GB",
                                  algorithm = "ring", protocol = "auto", overlap = false },
                    faults = faults, record = "none" }.makespan
            end
            H.near(step{ { rank = 2, slow = 0.5 } }, step(nil) + 3, 1e-9,
                   ("straggler at N = %d, zero %d: ring delayed by its lateness"):format(N, zero))
        end
    end
end

-- 9. Which chunks are bucketed (grad_sync.bucketed, core/par/dp_lane.c
-- chunk_bucketed). Megatron-Core's DistributedDataParallel cuts only
-- pipeline rank 0's first chunk into buckets; every other chunk goes as one
-- bucket once its last backward has ended. Two stages of two layers
-- (forward 1 s, backward 2 s, 1e8 parameters = 2e8 gradient bytes each),
-- bucket = one layer, one microbatch, 0-byte activations (alpha each):
-- stage 1's backward runs 8 + alpha .. 12 + alpha, then its send to stage 0
-- (alpha), then its wait for the sync; stage 0's runs 12 + 2 alpha .. 16 +
-- 2 alpha and ends the lane. Bucketed, a chunk's exposed sync is its
-- last (first-layer) bucket after its backward, sync2(2e8); as one bucket,
-- the whole chunk's, sync2(4e8), both less stage 1's send.
do
    local function run(bucketed)
        local layers = {}
        for i = 1, 4 do layers[i] = { fwd_time = 1, params = 1e8, out_bytes = 0 } end
        return ps.run{ cluster = mesh(4), layers = layers, stages = 2, microbatches = 1,
            dp = 2, grad_sync = { bucket = 2e8, first_bucket = 2e8, algorithm = "ring", protocol = "auto",
                                  bucketed = bucketed }, record = "none" }
    end
    local one, whole = sync2(2e8), sync2(4e8)
    local all, first, none = run(nil), run("first"), run("none")
    H.near(all.exposed_comm[1], one, 1e-9, "all: stage 0 bucketed")
    H.near(all.exposed_comm[2], one - alpha, 1e-9, "all: stage 1 bucketed")
    H.near(first.exposed_comm[1], one, 1e-9, "first: stage 0 bucketed")
    H.near(first.exposed_comm[2], whole - alpha, 1e-9,
           "first: stage 1 one bucket after its last backward")
    H.near(first.exposed_comm[4], whole - alpha, 1e-9, "first: replica 1's stage 1 too")
    H.near(none.exposed_comm[1], whole, 1e-9, "none: stage 0 one bucket")
    H.near(none.exposed_comm[2], whole - alpha, 1e-9, "none: stage 1 one bucket")
    -- stage 0 ends the step: the makespans follow its sync
    H.near(all.makespan, first.makespan, 1e-9, "first: stage 1 off the critical path")
    H.near(none.makespan - all.makespan, whole - one, 1e-9, "none: stage 0's whole chunk")
end

-- 10. Interleaving (v = 2): only chunk 0 of pipeline rank 0 is bucketed.
-- Two stages, four layers of 1e8 parameters (one per chunk), bucket =
-- half a layer: bucketed, each chunk's last backward (2 s) releases its
-- first half-layer bucket 1 s before its end and its second at its end;
-- as one bucket, the whole layer at the end. The last op of stage 0 is
-- chunk 0's last backward (its first layer), whose sync it waits for: two
-- buckets of 1e8 bytes, the first done before the second is ready, so
-- sync2(1e8) with "all" and "first", sync2(2e8) with "none"; stage 1's
-- the same less its send, with "first" sync2(2e8) (its chunks are not
-- rank 0's).
do
    local function run(bucketed)
        local layers = {}
        for i = 1, 4 do layers[i] = { fwd_time = 1, params = 1e8, out_bytes = 0 } end
        return ps.run{ cluster = mesh(4), layers = layers, stages = 2, virtual_stages = 2,
            schedule = "interleaved", microbatches = 2, dp = 2,
            grad_sync = { bucket = 1e8, first_bucket = 1e8, algorithm = "ring", protocol = "auto",
                          bucketed = bucketed }, record = "none" }
    end
    local all, first, none = run("all"), run("first"), run("none")
    H.near(all.exposed_comm[1], sync2(1e8), 1e-9, "v = 2, all: rank 0's chunk 0 bucketed")
    H.near(first.exposed_comm[1], sync2(1e8), 1e-9, "v = 2, first: rank 0's chunk 0 bucketed")
    H.near(none.exposed_comm[1], sync2(2e8), 1e-9, "v = 2, none: one bucket")
    -- stage 1 ends with chunk 0's last backward and its send (alpha)
    H.near(all.exposed_comm[2], sync2(1e8) - alpha, 1e-9, "v = 2, all: stage 1 bucketed")
    H.near(first.exposed_comm[2], sync2(2e8) - alpha, 1e-9,
           "v = 2, first: stage 1's chunks go as one bucket each")
end

-- 11. Bad input.
do
    local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
    H.raises(function() ps.run{ cluster = mesh(4), layers = layers, stages = 2,
        microbatches = 2, dp = 3 } end, "dp 3 x 2 stages need 6 ranks but the cluster has 4")
    H.raises(function() ps.run{ cluster = mesh(4), layers = layers, stages = 2,
        microbatches = 2, dp = 2, placement = "diagonal" } end, "unknown placement 'diagonal'")
    H.raises(function() ps.run{ cluster = mesh(4), layers = layers, stages = 2,
        microbatches = 2, dp = 2, zero = 4 } end, "field 'zero' must be an integer in 0..3, got 4")
    H.raises(function() ps.run{ cluster = mesh(4), layers = layers, stages = 2,
        microbatches = 2, dp = 2, grad_sync = { algorithm = "telepathy" } } end,
        "field 'grad_sync.algorithm'")
    H.raises(function() ps.run{ cluster = mesh(4), layers = layers, stages = 2,
        microbatches = 2, dp = 2, grad_sync = { bucketed = "last" } } end,
        "field 'grad_sync.bucketed': unknown value 'last' (expected all, first or none)")
end

H.done()
