-- overlap_param_gather (Megatron's --overlap-param-gather, core/par/dp.h): the
-- distributed optimizer's all-gather moves from after the optimizer step
-- to beside the forward: a chunk's buckets back to back once dispatched
-- (without interleaving at the stage's first forward, after its input
-- arrived; with it aligned across the pipeline), each piece of the first
-- forward waiting for its bucket (core/par/dp_lane.c dispatch_points, Megatron-LM
-- core 0.20.0; param_gather_start = "step": core 0.8's, the first bucket at
-- the step's start). Hand-computed against the same run without it.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local alpha, beta = 1e-3, 1e9 -- 1 ms, 1 GB/s per direction
-- ring all-gather on 2 ranks: (N-1)(a + T/(N b)), plus the protocol's
-- fixed latency charged to every gradient-sync collective (core/coll/coll.c
-- coll_append; NCCL 2.30.7 src/graph/tuning.cc): ring Simple (auto's
-- pick at these sizes), baseLatency 8.4 us and N - 1 = 1 step across
-- nodes (a mesh rank is its own node) at NCCL's 14.0 us less the link's
-- raw 2.7 (ring LL's, which the links stand for)
local function ag2(bytes) return alpha + bytes / (2 * beta) + (8.4 + 14.0 - 2.7) * 1e-6 end

-- A ZeRO-1 step of two replicas on a mesh of n ranks (fp32 gradients,
-- 16-bit weights, optimizer step 0.1 s, ring buckets of `bucket` bytes
-- with overlap): sync adds grad_sync fields, t sets ps.run's (stages,
-- microbatches, ...).
local function zero1(n, layers, bucket, sync, t)
    local g = { bucket = bucket, first_bucket = bucket, algorithm = "ring", protocol = "auto",
        overlap = true }
    for k, v in pairs(sync) do g[k] = v end
    local spec = { cluster = F.mesh(n, beta, alpha), layers = layers, stages = 1, microbatches = 1,
        dp = 2, zero = 1, optimizer_time = 0.1,
        memory = { weight_bytes = 2, grad_bytes = 4, optimizer_bytes = 12 }, grad_sync = g,
        record = "none" }
    for k, v in pairs(t or {}) do spec[k] = v end
    return ps.run(spec)
end

-- One stage, two replicas, one microbatch; two layers of forward 1 s,
-- backward 2 s, 1e8 parameters each: one bucket per layer (4e8 fp32
-- gradient bytes), all-gathered as 2e8 16-bit weight bytes. Without the
-- overlap both all-gathers follow the optimizer step; with it the first
-- (layer 0's, the forward's first) opens the step and the second runs
-- beside layer 0's forward, which is longer: one all-gather less.
local function run(pg)
    local layers = {}
    for i = 1, 2 do layers[i] = { fwd_time = 1, bwd_time = 2, params = 1e8 } end
    return ps.run { cluster = F.mesh(2, beta, alpha), layers = layers, stages = 1,
        microbatches = 1, dp = 2, zero = 1, optimizer_time = 0.1,
        memory = { weight_bytes = 2, grad_bytes = 4, optimizer_bytes = 12 },
        grad_sync = { bucket = 4e8, first_bucket = 4e8, algorithm = "ring", protocol = "auto", overlap = true,
            overlap_param_gather = pg },
        record = "events" }
end
local a = ag2(2e8)
H.check(a < 1, "an all-gather is shorter than a layer's forward")
local off, on = run(false), run(true)
H.near(off.makespan - on.makespan, a, 1e-9, "one all-gather hidden behind the forward")
H.near(off.exposed_comm[1] - on.exposed_comm[1], a, 1e-9,
    "exposed: the first all-gather's wait instead of both after the step")
H.check(on.exposed_comm[1] > a - 1e-12, "the first all-gather is exposed")

-- an all-gather longer than the forward it hides behind: the forward waits
-- for it (one layer of 1 s, its bucket's all-gather 1.5 s, of 3e9 bytes)
do
    local layers = {}
    for i = 1, 2 do layers[i] = { fwd_time = 1, bwd_time = 2, params = 1.5e9 } end
    local function run2(pg)
        return ps.run { cluster = F.mesh(2, beta, alpha), layers = layers, stages = 1,
            microbatches = 1, dp = 2, zero = 1, optimizer_time = 0.1,
            memory = { weight_bytes = 2, grad_bytes = 4, optimizer_bytes = 12 },
            grad_sync = { bucket = 6e9, first_bucket = 6e9, algorithm = "ring", protocol = "auto",
                overlap = true, overlap_param_gather = pg }, record = "none" }
    end
    local big = ag2(3e9)
    H.check(big > 1, "this all-gather is longer than a layer's forward")
    -- hidden: only the part of the second all-gather that layer 0's
    -- forward covers, 1 s
    H.near(run2(false).makespan - run2(true).makespan, 1, 1e-9,
        "the second all-gather hides only behind layer 0's forward")
end

-- Without interleaving, under pipeline parallelism the overlap is slower
-- than none by one all-gather, as in Megatron: align_param_gather is off
-- there (arguments.py), so a stage's first bucket is dispatched by its
-- first forward pre-hook, which the CPU reaches only once the stage's
-- input is there (recv_forward ends with torch.cuda.synchronize(),
-- batch_p2p_sync); each hook then dispatches the next bucket at once (CPU
-- time), so they run back to back. Two stages of one layer (forward 1 s,
-- backward 2 s, one bucket each, all-gather a), one microbatch, 0-byte
-- activations (alpha each). With it: stage 0 waits a, F 1, alpha; stage 1
-- gathers a only then, F 1, B 2, alpha; stage 0's B 2, its reduce-scatter
-- r, OPT 0.1: 2a + 6.1 + 2 alpha + r. Without: the same less both waits,
-- plus stage 0's all-gather after its OPT: a + 6.1 + 2 alpha + r. So off -
-- on = -a. (Dispatching the next bucket only when the GPU's forward
-- reached the one before, as pipesim did, started stage 1's first bucket
-- at the step's start, hidden behind stage 0: off - on = 0.)
--
-- param_gather_start = "step" (Megatron-Core 0.5 to 0.8, the Megatron-LM
-- README's H100 table: DistributedOptimizer.zero_grad dispatches the
-- first bucket's all-gather at the step's start, distrib_optimizer.py of
-- core_r0.8.0 and f2e5db402c): stage 1's all-gather runs from the step's
-- start, beside stage 0's wait a and forward 1, so it is done (a < 1 + a)
-- when stage 1's input arrives and nothing waits on it: the same step as
-- without the overlap (whose stage 1 all-gather hides behind stage 0's
-- drain), off - on = 0, and one all-gather a faster than "forward".
do
    local function run2(pg, start)
        local layers = {}
        for i = 1, 2 do layers[i] = { fwd_time = 1, bwd_time = 2, params = 1e8, out_bytes = 0 } end
        return zero1(4, layers, 4e8, { overlap_param_gather = pg, param_gather_start = start },
            { stages = 2 })
    end
    local none = run2(false)
    H.near(none.makespan - run2(true).makespan, -a, 1e-9,
        "pipeline without interleaving: stage 1 gathers once its input is there")
    H.near(none.makespan - run2(true, "forward").makespan, -a, 1e-9, "forward is the default")
    local step = run2(true, "step")
    H.near(none.makespan - step.makespan, 0, 1e-9,
        "step: stage 1's all-gather from the step's start, hidden behind stage 0's first forward")
    -- exposed: stage 0 waits a for its all-gather (before its forward) and
    -- the reduce-scatter of its one bucket after its backward, as with
    -- "forward"; stage 1 waits for none of its all-gather now
    H.near(step.exposed_comm[1], run2(true).exposed_comm[1], 1e-9, "step: stage 0 as forward")
    H.near(run2(true).exposed_comm[2] - step.exposed_comm[2], a, 1e-9,
        "step: stage 1 no longer waits for its all-gather")
end

-- The all-gathers follow the gradient buckets (Megatron's DDP uses one
-- set of buckets for both): with grad_sync.bucketed = "first" a stage > 0
-- is one bucket, so its first forward waits for the whole stage's
-- all-gather. Two stages of two layers (forward 1 s, backward 2 s, 1e8
-- parameters, one bucket per layer when bucketed), one microbatch. "all":
-- stage 1 waits a = ag2(2e8) for its first layer's bucket, the second's
-- (a < 1) runs beside that layer's forward; "first": it waits ag2(4e8)
-- for the stage's one bucket. Stage 1's wait is on the step's path
-- (stage 0's backward follows stage 1's), so the step grows by ag2(4e8) -
-- ag2(2e8) = 2e8 / (2 beta); stage 0 is bucketed either way.
do
    local function run2(bucketed)
        local layers = {}
        for i = 1, 4 do layers[i] = { fwd_time = 1, bwd_time = 2, params = 1e8, out_bytes = 0 } end
        return ps.run { cluster = F.mesh(4, beta, alpha), layers = layers, stages = 2,
            microbatches = 1, dp = 2, zero = 1, optimizer_time = 0.1,
            memory = { weight_bytes = 2, grad_bytes = 4, optimizer_bytes = 12 },
            grad_sync = { bucket = 4e8, first_bucket = 4e8, algorithm = "ring", protocol = "auto", overlap = true,
                overlap_param_gather = true, bucketed = bucketed }, record = "none" }
    end
    local all, first = run2("all"), run2("first")
    H.near(first.makespan - all.makespan, ag2(4e8) - ag2(2e8), 1e-9,
        "bucketed = first: stage 1's first forward waits for its whole all-gather")
    H.near(first.exposed_comm[1], all.exposed_comm[1], 1e-9, "stage 0 bucketed either way")
end

-- Interleaving (v = 2): Megatron aligns the all-gathers across the
-- pipeline (align_param_gather, its default with interleaving): chunks 0
-- and 1 are dispatched whole before the first forward, so every stage's
-- comm lane runs its four all-gathers (a each, longer than a layer's
-- forward f) back to back from the start and only stage 0's first forward
-- waits: a for its first bucket and a - f for its second, behind its first
-- layer; the pipeline shifts by 2a - f, where without the overlap all four
-- follow the optimizer: off - on = 4a - (2a - f). The old chain (each
-- bucket dispatched when the forward reached the one before) made chunk
-- 1's second bucket wait behind chunk 1's first forward on every stage in
-- turn, slower than no overlap at all.
do
    local f = 0.05
    local function run4(pg)
        local layers = {}
        for i = 1, 16 do layers[i] = { fwd_time = f, bwd_time = 2 * f, params = 8e7 } end
        return ps.run { cluster = F.mesh(8, beta, alpha), layers = layers, stages = 4,
            virtual_stages = 2, schedule = "interleaved", microbatches = 8, dp = 2, zero = 1,
            optimizer_time = 0.1, memory = { weight_bytes = 2, grad_bytes = 4, optimizer_bytes = 12 },
            grad_sync = { bucket = 3.2e8, first_bucket = 3.2e8, algorithm = "ring", protocol = "auto",
                overlap = true, overlap_param_gather = pg }, record = "none" }
    end
    local a4 = ag2(1.6e8)
    H.check(a4 > f, "each all-gather is longer than a layer's forward")
    local off4, on4 = run4(false), run4(true)
    H.near(off4.makespan - on4.makespan, 2 * a4 + f, 1e-9,
        "interleaving: all chunks' all-gathers from the start, only stage 0 waits")
    H.check(on4.makespan < off4.makespan, "interleaving: the overlap is faster than none")
end

-- Interleaving with param_gather_start = "step" (core 0.8: no
-- align_param_gather; _finish_param_sync_helper chains the buckets across
-- chunks): chunk 1's all-gather goes once the CPU reaches the pre-hook of
-- chunk 0's last bucket, in chunk 0's first forward, after its input
-- arrived; aligned ("forward", core >= 0.9) chunks 0 and 1 go at the
-- step's start. Two stages, v = 2, one layer a chunk (forward f, backward
-- 2f), one bucket each; rank 1's chunk 1 holds 3e8 parameters (its
-- all-gather a4 = ag2(6e8) outlasts the fill), the others 2e7 (a1 =
-- ag2(4e7) < f). Aligned, rank 1's chunk 1 forward waits until a1 + a4;
-- "step", until its dispatch at rank 1's first forward, a1 + f + alpha
-- (rank 0's first forward after its own a1, the 0-byte transfer), plus
-- a4: later by f + alpha, and the step with it.
do
    local f = 0.05
    local P = { 2e7, 2e7, 2e7, 3e8 }
    local function run5(start)
        local layers = {}
        for i = 1, 4 do layers[i] = { fwd_time = f, bwd_time = 2 * f, params = P[i], out_bytes = 0 } end
        return zero1(4, layers, 1e10, { overlap_param_gather = true, param_gather_start = start },
            { stages = 2, virtual_stages = 2, schedule = "interleaved", microbatches = 2 })
    end
    local a1, a4 = ag2(4e7), ag2(6e8)
    H.check(a1 < f and a4 > a1 + 3 * f + alpha, "rank 1's chunk 1 all-gather outlasts the fill")
    H.near(run5("step").makespan - run5("forward").makespan, f + alpha, 1e-9,
        "interleaving, step: chunk 1 dispatched at chunk 0's first forward")
end

-- The exposed sync in closed form (ZeRO-1, no pipeline): only the last
-- microbatch's backward reduces (Megatron's forward_backward_no_pipelining
-- runs the first m - 1 under no_sync), bucket by bucket as it makes them.
-- One stage, two microbatches, four layers (forward 0.5 s, backward 1 s,
-- 3.5e8 parameters: one bucket of 1.4e9 fp32 gradient bytes each, its
-- reduce-scatter c = 0.70 s < 1 s, so each ends before the next bucket is
-- ready and only the last one's shows). Compute 2 x (2 + 4) = 12 s, the
-- optimizer step 0.1 / 2. Without the overlap the four all-gathers (a =
-- 0.35 s each) follow it; with it ("step") only the first is exposed,
-- before the first forward, the others hiding behind layers' forwards
-- (a < 0.5).
do
    local function run3(pg)
        local layers = {}
        for i = 1, 4 do layers[i] = { fwd_time = 0.5, bwd_time = 1, params = 3.5e8 } end
        return zero1(2, layers, 1.4e9,
            { overlap_param_gather = pg, param_gather_start = pg and "step" or nil },
            { microbatches = 2 })
    end
    local c, a3 = ag2(1.4e9), ag2(7e8) -- a ring reduce-scatter costs as its all-gather
    H.check(c < 1 and a3 < 0.5, "each collective shorter than the compute it hides behind")
    local after, step = run3(false), run3(true)
    H.near(after.makespan, 12 + c + 0.05 + 4 * a3, 1e-9,
        "no overlap: the last reduce-scatter, then 4 all-gathers")
    H.near(after.exposed_comm[1], c + 4 * a3, 1e-9,
        "exposed: the last bucket's reduce-scatter and the all-gathers")
    H.near(step.makespan, a3 + 12 + c + 0.05, 1e-9,
        "step: the first all-gather and the last reduce-scatter")
    H.near(step.exposed_comm[1], a3 + c, 1e-9,
        "exposed: the first all-gather and the last reduce-scatter")
end

-- Megatron's flag sets it (with its two prerequisites)
local flags = { num_layers = 4, hidden_size = 1024, num_attention_heads = 16, seq_length = 1024,
    vocab_size = 32000, bf16 = true, world_size = 16, micro_batch_size = 1, global_batch_size = 64,
    use_distributed_optimizer = true, overlap_grad_reduce = true, overlap_param_gather = true,
    cluster = ps.cluster(ps.clusters.dgx("H100", 2)) }
local spec = ps.models.megatron(flags)
H.eq(spec.grad_sync.overlap_param_gather, true, "megatron: --overlap-param-gather")
H.eq(spec.grad_sync.bucketed, "first", "megatron: bucketing on pipeline rank 0's chunk 0 only")
H.eq(spec.grad_sync.param_gather_start, nil, "megatron: forward (core 0.20) by default")
flags.param_gather_start = "step"
H.eq(ps.models.megatron(flags).grad_sync.param_gather_start, "step", "megatron: core 0.8's")
flags.param_gather_start = nil
flags.overlap_param_gather = nil
H.eq(ps.models.megatron(flags).grad_sync.overlap_param_gather, nil, "megatron: off by default")
H.done()
