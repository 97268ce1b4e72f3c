-- How close to reality on H100: Megatron-LM's published weak-scaling runs
-- against pipesim's prediction with the default H100 preset (one set of
-- datasheet and microbenchmark constants, never fitted to these rows).
-- Prints the README's H100 table ("How close to reality").
--
-- Source (W): NVIDIA/Megatron-LM README, "Performance Benchmarking" and
-- its table images/model_table.png, added in f2e5db402c (2024-07-15, "New
-- scaling figures on H100 GPUs"): GPT models 1.7B-462B on DGX H100, BF16
-- (MFU = per-GPU TFLOP/s / 989), vocabulary 131,072, sequence 4,096,
-- with --overlap-grad-reduce, --overlap-param-gather (the distributed
-- optimizer), --tp-comm-overlap; the table gives heads, hidden, layers,
-- TP, PP, DP, GPUs, global batch and per-GPU TFLOP/s. The per-GPU
-- TFLOP/s becomes a step time with Megatron's own FLOP count of that
-- commit (megatron/training/training.py num_floating_point_operations,
-- no recompute term): 12 B s L h^2 (2 + s/h + 4 + V/(2 L h)) / (GPUs x
-- TFLOP/s). Not stated, assumed here: micro batch 1, no interleaving, no
-- recompute, sequence parallelism (--tp-comm-overlap needs it), Transformer
-- Engine's fused attention (Megatron-Core's default), GeLU MLP of 4h,
-- untied embeddings (the parameter counts need them: 1.7B is 24 x 12h^2
-- + 2Vh), learned positions and Megatron's default dropout. Each row
-- also runs one data-parallel replica alone (dp 1) with TP communication
-- overlapped and blocking, and overlapped with full recompute (Megatron's
-- --recompute-granularity full --recompute-method uniform, one layer a
-- chunk: what examples/academic_paper_scripts/sc21/run_table_1.sh runs on
-- every row of the 2021 table this one replaced in the README), to tell
-- the DP, TP-overlap and compute costs apart (README "How close to
-- reality", "On H100").
--
-- Compute check (S): the same README's strong scaling of the 177B model
-- (images/strong_scaling.png, Megatron-Core r0.8.0, batch 1152 throughout:
-- "MFU from 47% to 42%"): at 96 GPUs, TP 8 x PP 6 as the 177B row, DP 2,
-- each pipeline runs 576 microbatches, so its bubble is (p-1)/m = 0.9 %
-- and its gradient sync (15.3 GB of fp32 gradients per GPU between two
-- ranks and the bf16 all-gather back, ~0.23 s through one NIC) is 0.3 %
-- of the ~80 s step: the published 47 % is the per-GPU compute rate of a
-- 177B layer alone, 0.47 x 989 = 465 TFLOP/s.
--
-- `-D recompute=1` runs the full jobs (the "pipesim" column) with full
-- recompute too.
--
-- Gradients reduced in fp32: that Megatron-LM's arguments.py (lines
-- 299-307 at f2e5db402c) sets accumulate_allreduce_grads_in_fp32 for
-- every --bf16 run, which training.py passes on as Megatron-Core's
-- grad_reduce_in_fp32 (ps.models.megatron's default for bf16).
--
-- --overlap-param-gather as the table's Megatron-Core (f2e5db402c, core
-- 0.8) runs it: DistributedOptimizer.zero_grad dispatches the first
-- bucket's all-gather at the step's start, on every pipeline stage
-- (param_gather_start = "step"; docs/fidelity.md "Megatron-LM's own H100
-- table").
local ps = require "pipesim"
local V = require "pipesim.validation"

-- name, heads, hidden, layers, tp, pp, dp, global batch, TFLOP/s per GPU
local CASES = {
    { "1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8 },
    { "7.1B", 32, 4096, 30, 2, 1, 48, 192, 465.9 },
    { "16B", 48, 6144, 32, 4, 1, 48, 192, 489.1 },
    { "32B", 56, 7168, 48, 8, 1, 48, 192, 459.6 },
    { "70B", 64, 8192, 84, 8, 2, 48, 384, 419.7 },
    { "119B", 80, 10240, 92, 8, 4, 48, 768, 420.5 },
    { "177B", 96, 12288, 96, 8, 6, 48, 1152, 432.8 },
    { "314B", 128, 16384, 96, 8, 8, 48, 1536, 474.4 },
    { "462B", 144, 18432, 112, 8, 16, 48, 3072, 459.9 },
}
local SEQ, VOCAB = 4096, 131072

-- Megatron's num_floating_point_operations for a GPT of 4h MLP, MHA
local function megatron_flops(B, L, h)
    return 12.0 * B * SEQ * L * h * h * (2 + SEQ / h + 4 + VOCAB / (2 * L * h))
end

-- `-D quick=1` (the test suite) runs two rows; the full table simulates
-- up to 6,144 GPUs (~15 s of CPU).
local quick = ps.args.quick
-- `-D row=177B` runs that row alone (no S), `-D record=events` records
-- its timeline, `-D pg_start=forward` dispatches the parameter all-gathers
-- as Megatron-Core >= 0.9 does (docs/fidelity.md compares the two)
local only, record = ps.args.row, ps.args.record or "summary"
local pg_start = ps.args.pg_start or "step"
if only then
    local names, found = {}, false
    for _, c in ipairs(CASES) do
        names[#names + 1] = c[1]
        found = found or c[1] == only
    end
    if not found then
        error(string.format("-D row=%s is not a row of the table (one of %s)", only,
            table.concat(names, ", ")))
    end
end
local all_recompute = ps.args.recompute ~= nil

-- the Megatron flags of one row; dp = 1 gives the replica alone (its
-- B / dp sequences on tp x pp GPUs)
local function flags(c, dp, tp_overlap, recompute)
    local name, a, h, L, tp, pp, _, B = table.unpack(c)
    local gpus = tp * pp * dp
    return {
        num_layers = L, hidden_size = h, num_attention_heads = a, seq_length = SEQ,
        vocab_size = VOCAB, bf16 = true, micro_batch_size = 1, global_batch_size = B // (c[7] // dp),
        world_size = gpus, tensor_model_parallel_size = tp, pipeline_model_parallel_size = pp,
        sequence_parallel = tp > 1 or nil, untie_embeddings_and_output_weights = true,
        use_distributed_optimizer = dp > 1 or nil, overlap_grad_reduce = dp > 1 or nil,
        overlap_param_gather = dp > 1 or nil,
        -- the Megatron-Core of the table (f2e5db402c, core 0.8):
        -- DistributedOptimizer.zero_grad dispatches the first all-gather
        -- at the step's start (core/par/dp_lane.c dispatch_points)
        param_gather_start = dp > 1 and pg_start or nil,
        tp_comm_overlap = (tp > 1 and tp_overlap) or nil,
        recompute_granularity = recompute and "full" or nil,
        recompute_method = recompute and "uniform" or nil,
        cluster = ps.cluster(ps.clusters.dgx("H100", (gpus + 7) // 8)), record = record,
        name = string.format("W %s dp%d%s%s%s", name, dp, tp_overlap and "" or " tp blocking",
            recompute and " recompute" or "", dp > 1 and " pg " .. pg_start or ""),
    }
end

local errs = {}
print(string.format("%-6s %-16s %9s %9s %8s %10s %10s %8s %10s %8s", "model", "tp/pp/dp, gpus",
    "published", "pipesim", "error", "dp1 ovl", "dp1 block", "error", "dp1 recomp", "error"))
local rerrs, oerrs = {}, {}
for k, c in ipairs(CASES) do
    if (not quick or k == 2 or k == 5) and (not only or c[1] == only) then
        local name, _, h, L, tp, pp, dp, B, tflops = table.unpack(c)
        local gpus = tp * pp * dp
        local secs = megatron_flops(B, L, h) / (gpus * tflops * 1e12)
        local r = ps.run(ps.models.megatron(flags(c, dp, true, all_recompute)))
        local r1 = ps.run(ps.models.megatron(flags(c, 1, true)))
        local r1b = ps.run(ps.models.megatron(flags(c, 1, false)))
        local r1r = ps.run(ps.models.megatron(flags(c, 1, true, true)))
        local err = (r.makespan - secs) / secs
        errs[#errs + 1] = err
        rerrs[#rerrs + 1] = (r1r.makespan - secs) / secs
        oerrs[#oerrs + 1] = (r1.makespan - secs) / secs
        print(string.format("%-6s %-16s %8.2fs %8.2fs %+7.1f%% %9.2fs %9.2fs %+7.1f%% %9.2fs %+7.1f%%",
            name, string.format("%d/%d/%d, %d", tp, pp, dp, gpus), secs, r.makespan, 100 * err,
            r1.makespan, r1b.makespan, 100 * (r1b.makespan - secs) / secs, r1r.makespan,
            100 * rerrs[#rerrs]))
    end
end
-- mean and max |error| in percent, by pipesim.validation's shared tally
local function stats(list)
    local mean, max = V.stats(list)
    return 100 * mean, 100 * max
end
print(string.format("W: %d runs, mean |error| %.1f%%, max %.1f%%", #errs, stats(errs)))
print(string.format("W, one replica with full recompute against the published step: " ..
    "mean |error| %.1f%%, max %.1f%%", stats(rerrs)))
-- the replica alone with TP overlapped, no recompute: the compute and TP
-- terms without the data-parallel sync (docs/fidelity.md reads the
-- compute rate from it)
print(string.format("W, one replica (TP overlapped) against the published step: " ..
    "mean |error| %.1f%%, max %.1f%%", stats(oerrs)))

-- S: the compute check (see the top): 177B, TP 8 x PP 6 x DP 2 on 96 GPUs
local S = { "177B", 96, 12288, 96, 8, 6, 2, 1152 }
local published = 0.47 * 989
for _, recompute in ipairs(only and {} or { false, true }) do
    local f = flags(S, 2, true, recompute)
    f.name = "S 177B 96 GPUs" .. (recompute and " recompute" or "")
    local r = ps.run(ps.models.megatron(f))
    local got = megatron_flops(S[8], S[4], S[3]) / (96 * r.makespan) / 1e12
    print(string.format("S: 177B, 8/6/2, 96 GPUs, %s: published 47%% MFU = %.0f TFLOP/s per " ..
        "GPU, pipesim %.0f (%+.1f%%)", recompute and "full recompute" or "no recompute",
        published, got, 100 * (got - published) / published))
end
