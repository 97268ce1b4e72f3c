-- Replica folding (core/par/fold.h, issue 28): identical data-parallel
-- replicas run once, and the result equals the full simulation's to 1e-9
-- (makespan, every rank's bubble, peak memory and its time, static memory,
-- exposed sync); faults, stragglers and event rows turn it off.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"

local clusters = {}
local function dgx(nodes, opts)
    local key = nodes .. (opts and "x" or "")
    clusters[key] = clusters[key] or ps.cluster(ps.clusters.dgx("H100", nodes, opts))
    return clusters[key]
end

-- a small GPT on `nodes` DGX H100 nodes; o: tp, pp, vp, gb, zero, cluster
local function step(nodes, o, extra)
    local run = ps.models.megatron{ num_layers = 8, hidden_size = 1024,
        ffn_hidden_size = 4096, num_attention_heads = 16, seq_length = 2048,
        vocab_size = 32000, tensor_model_parallel_size = o.tp,
        pipeline_model_parallel_size = o.pp,
        num_layers_per_virtual_pipeline_stage = o.vp,
        micro_batch_size = 1, global_batch_size = o.gb or 32, bf16 = true,
        use_distributed_optimizer = o.zero, overlap_grad_reduce = true,
        overlap_param_gather = o.zero, world_size = nodes * 8,
        cluster = o.cluster or dgx(nodes) }
    run.record = "summary"
    for k, v in pairs(extra or {}) do run[k] = v end
    return ps.run(run)
end

local fields = { "stage_bubble", "peak_memory", "peak_time", "static_memory", "exposed_comm" }

-- folded and full agree rank by rank
local function same(a, b, what)
    H.near(a.makespan, b.makespan, 1e-9, what .. ": makespan")
    H.eq(#a.rank, #b.rank, what .. ": ranks")
    H.check(#a.rank > 0, what .. ": some ranks")
    local worst, at = 0, nil
    for k = 1, #b.rank do
        for _, f in ipairs(fields) do
            local x, y = a[f][k], b[f][k]
            local d = math.abs(x - y) / math.max(math.abs(y), 1e-30)
            if d > worst then worst, at = d, f .. "[" .. k .. "]" end
        end
    end
    H.check(worst <= 1e-9, ("%s: every rank within 1e-9 (worst %g at %s)"):format(what, worst, at))
end

-- 1. DP 2 to 16 with PP and TP, 1F1B and interleaved, ZeRO-1 or not:
-- folded (one replica, or two where two replicas share a node) = full
local cases = {
    { 2, { tp = 8, pp = 1 } },                     -- DP 2, no pipeline
    { 4, { tp = 8, pp = 2 } },                     -- DP 2
    { 4, { tp = 4, pp = 2 } },                     -- DP 4, two replicas a node
    { 8, { tp = 8, pp = 2, vp = 2, zero = true } }, -- DP 4, interleaved, ZeRO-1
    { 8, { tp = 2, pp = 4, zero = true } },        -- DP 8
    { 16, { tp = 8, pp = 1, gb = 64 } },           -- DP 16
    -- DP 3 with ZeRO-1: the buckets, padded to a multiple of lcm(3, 128)
    -- elements as Megatron's distributed optimizer pads them
    -- (core/par/dp_lane.c bucket_pad), split evenly over the ring;
    -- unpadded, its chunks differed by an element and nothing folded
    { 3, { tp = 8, pp = 1, gb = 36, zero = true } },
    { 6, { tp = 8, pp = 2, gb = 36, zero = true } },
}
for _, c in ipairs(cases) do
    local nodes, o = c[1], c[2]
    local what = ("%d nodes tp %d pp %d%s%s"):format(nodes, o.tp, o.pp,
        o.vp and " vp" or "", o.zero and " zero-1" or "")
    local folded, full = step(nodes, o), step(nodes, o, { fold = false })
    H.eq(folded.folded, true, what .. ": folded")
    H.eq(full.folded, false, what .. ": fold = false runs every replica")
    same(folded, full, what)
end

-- 1b. without the distributed optimizer Megatron pads nothing: DDP's
-- all-reduce of DP 3 keeps chunks an element apart, and every replica runs
do
    local o = { tp = 8, pp = 1, gb = 36 }
    local a, b = step(3, o), step(3, o, { fold = false })
    H.eq(a.folded, false, "DP 3 without ZeRO-1: not folded")
    same(a, b, "DP 3 without ZeRO-1")
end

-- 2. a straggler (faults' slow) turns folding off; the result is the full one
do
    local o = { tp = 8, pp = 2 }
    local slow = { { rank = 8, slow = 0.5 } }
    local a = step(4, o, { faults = slow })
    local b = step(4, o, { faults = slow, fold = false })
    H.eq(a.folded, false, "faults: not folded")
    same(a, b, "faults")
    H.check(a.makespan > step(4, o).makespan, "the straggler slows the step")
end

-- 3. a slower device in replica 1 makes the replicas differ: not folded
-- (layers given in FLOPs, timed on each rank's device; PP 2, DP 4 on one
-- node: cluster rank 1 is replica 1's first stage)
do
    local layers = {}
    for i = 1, 4 do layers[i] = { fwd_flops = 4e12, params = 1e8, out_bytes = 1e6 } end
    local function run(devices, fold)
        local spec = ps.clusters.dgx("H100", 1)
        spec.devices = devices
        return ps.run{ cluster = ps.cluster(spec), layers = layers, stages = 2,
            dp = 4, microbatches = 4, record = "summary", fold = fold }
    end
    local slow = { [1] = { flops = 0.7 * 989e12 } }
    local a, b = run(slow), run(slow, false)
    H.eq(a.folded, false, "a slow device: not folded")
    same(a, b, "a slow device")
    local even = run(nil)
    H.eq(even.folded, true, "the same devices: folded")
    H.check(a.makespan > even.makespan, "the slow device slows the step")
    same(even, run(nil, false), "flop layers, pp 2 x dp 4")
end

-- 4. event rows need every rank's ops: not folded
H.eq(step(4, { tp = 8, pp = 2 }, { record = "events" }).folded, false, "events: not folded")

-- 5. an oversubscribed fabric: the core may be a bottleneck, not folded
do
    local c = dgx(4, { oversubscription = 2 })
    local a = step(4, { tp = 8, pp = 2, cluster = c })
    H.eq(a.folded, false, "oversubscribed: not folded")
    same(a, step(4, { tp = 8, pp = 2, cluster = c }, { fold = false }), "oversubscribed")
end

-- 6. an MoE step folds where its expert-parallel group is the whole
-- data-parallel group (DeepSeek-V3's layers, EP 8 = DP 8, DualPipe,
-- ZeRO-1): the all-to-alls are rotations of each other, and the result is
-- the full one (the streaming check leaves MoE steps to par_fold_build)
do
    local function moe(fold)
        return ps.run{ cluster = ps.cluster(ps.clusters.dgx("H800", 4)),
            layers = ps.models.preset("deepseek-v3", { dispatch_dtype = "fp8" }),
            stages = 4, dp = 8, ep = 8, microbatches = 8, schedule = "dualpipe", zero = 1,
            record = "summary", fold = fold, grad_sync = { bucket = "1 TB", first_bucket = "1 TB" } }
    end
    local a, b = moe(true), moe(false)
    H.eq(a.folded, true, "MoE, EP = DP: folded")
    same(a, b, "MoE, EP = DP")
end

-- 6b. expert parallelism nested in the data-parallel dimension (Megatron's
-- expert order tp-ep-dp-pp): EP 64 inside DP 128 at tp 1, DeepSeek-V3's
-- first six layers on one stage of 16 DGX H800. A GPU is an instance, so
-- shifts by less than a node cross nodes; by 8 to 32 they map an EP group
-- onto two; by 64 (the expert-data-parallel replicas) the step is its own
-- image: 64 representatives, the same result as all 128 replicas
do
    local model = ps.models.preset("deepseek-v3", { dispatch_dtype = "fp8" })
    local layers = { table.unpack(model, 1, 6) }
    local c = ps.cluster(ps.clusters.dgx("H800", 16))
    local function moe(fold)
        return ps.run{ cluster = c, layers = layers, stages = 1, dp = 128, ep = 64,
            microbatches = 2, zero = 1, record = "summary", fold = fold,
            grad_sync = { bucket = "1 TB", first_bucket = "1 TB" } }
    end
    local a, b = moe(true), moe(false)
    H.eq({ a.folded, b.folded }, { true, false }, "MoE, EP 64 in DP 128: folded")
    same(a, b, "MoE, EP 64 in DP 128")
end

-- 6c. ZeRO-2 and ZeRO-3 (core/par/fsdp.c): the reduce-scatters after every
-- microbatch's backward and ZeRO-3's gathers are checked as they are
-- lowered (core/par/fold_stream.c) and dropped; the result is the full one
for _, z in ipairs { 2, 3 } do
    local a = step(8, { tp = 8, pp = 2 }, { zero = z })
    H.eq(a.folded, true, "ZeRO-" .. z .. ": folded")
    same(a, step(8, { tp = 8, pp = 2 }, { zero = z, fold = false }), "ZeRO-" .. z)
end

-- 7. fold must be a boolean
H.raises(function() step(4, { tp = 8, pp = 2 }, { fold = "no" }) end, "fold")

H.done()
