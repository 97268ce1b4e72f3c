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
-- recompute, sequence parallelism (--tp-comm-overlap needs it), flash
-- attention (Transformer Engine's fused attention), GeLU MLP of 4h,
-- untied embeddings (the parameter counts need them: 1.7B is 24 x 12h^2
-- + 2Vh), learned positions and Megatron's default dropout. Each row
-- also runs one data-parallel replica alone (dp 1) with TP communication
-- overlapped and blocking, to tell the DP, TP-overlap and compute costs
-- apart (README "How close to reality", "On H100").
local ps = require "pipesim"

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

-- the Megatron flags of one row; dp = 1 gives the replica alone (its
-- B / dp sequences on tp x pp GPUs)
local function flags(c, dp, tp_overlap)
    local name, a, h, L, tp, pp, _, B = table.unpack(c)
    local gpus = tp * pp * dp
    return {
        num_layers = L, hidden_size = h, num_attention_heads = a, seq_length = SEQ,
        vocab_size = VOCAB, bf16 = true, micro_batch_size = 1, global_batch_size = B // (c[7] // dp),
        world_size = gpus, tensor_model_parallel_size = tp, pipeline_model_parallel_size = pp,
        sequence_parallel = tp > 1 or nil, use_flash_attn = true,
        untie_embeddings_and_output_weights = true,
        use_distributed_optimizer = dp > 1 or nil, overlap_grad_reduce = dp > 1 or nil,
        overlap_param_gather = dp > 1 or nil,
        tp_overlap = (tp > 1 and tp_overlap) or nil,
        cluster = ps.cluster(ps.clusters.dgx("H100", (gpus + 7) // 8)), record = "summary",
        name = string.format("W %s dp%d%s", name, dp, tp_overlap and "" or " tp blocking"),
    }
end

local errs = {}
print(string.format("%-6s %-16s %9s %9s %8s %10s %10s %8s", "model", "tp/pp/dp, gpus",
    "published", "pipesim", "error", "dp1 ovl", "dp1 block", "error"))
for k, c in ipairs(CASES) do
    if not quick or k == 2 or k == 5 then
        local name, _, h, L, tp, pp, dp, B, tflops = table.unpack(c)
        local gpus = tp * pp * dp
        local secs = megatron_flops(B, L, h) / (gpus * tflops * 1e12)
        local r = ps.run(ps.models.megatron(flags(c, dp, true)))
        local r1 = ps.run(ps.models.megatron(flags(c, 1, true)))
        local r1b = ps.run(ps.models.megatron(flags(c, 1, false)))
        local err = (r.makespan - secs) / secs
        errs[#errs + 1] = err
        print(string.format("%-6s %-16s %8.2fs %8.2fs %+7.1f%% %9.2fs %9.2fs %+7.1f%%", name,
            string.format("%d/%d/%d, %d", tp, pp, dp, gpus), secs, r.makespan, 100 * err,
            r1.makespan, r1b.makespan, 100 * (r1b.makespan - secs) / secs))
    end
end
local sum, max = 0, 0
for _, e in ipairs(errs) do
    sum = sum + math.abs(e)
    max = math.max(max, math.abs(e))
end
print(string.format("W: %d runs, mean |error| %.1f%%, max %.1f%%", #errs, 100 * sum / #errs,
    100 * max))
