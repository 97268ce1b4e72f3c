-- How close to reality: published Megatron-LM iteration times against
-- pipesim's prediction with the default A100 preset (one set of constants,
-- never fitted per case). Prints the README's "How close to reality" table.
--
-- Sources (A100 80GB, DGX A100 nodes of NVIDIA's Selene, 16-bit):
--  K: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
--     Transformer Models", Table 3 (configurations) and Table 5 (iteration
--     time with full recompute, and with sequence parallelism + selective
--     recompute); the configurations as Calculon's validation files give
--     them (calculon-ai/calculon validation/*.json: micro batch 1 except
--     22B's 4, interleaving 3 for 175B and 530B).
--  N: Narayanan et al. 2021, "Efficient Large-Scale Language Model Training
--     on GPU Clusters Using Megatron-LM", Table 1: achieved TFLOP/s per GPU,
--     converted to an iteration time with the paper's own FLOP count (eq. 3,
--     with activation recomputation): 96 B s l h^2 (1 + s/6h + V/16lh) /
--     (GPUs x TFLOP/s). Table 1 does not give the micro batch size or the
--     schedule: we assume micro batch 1, no interleaving, full recompute.
local ps = require "pipesim"
local V = require "pipesim.validation"

-- name, source, layers, hidden, heads, tp, pp, v (interleaving), gpus,
-- global batch, micro batch, mode ("full" | "sel": SP + selective),
-- published seconds (or nil) and TFLOP/s per GPU (N rows), Calculon's
-- published error where it publishes one per case (none does)
local CASES = {
    { "22B",   "K", 48, 6144, 64, 8, 1, 1, 8, 4, 4, "full", 1.42 },
    { "22B",   "K", 48, 6144, 64, 8, 1, 1, 8, 4, 4, "sel", 1.10 },
    { "175B",  "K", 96, 12288, 96, 8, 8, 3, 64, 64, 1, "full", 18.13 },
    { "175B",  "K", 96, 12288, 96, 8, 8, 3, 64, 64, 1, "sel", 13.75 },
    { "530B",  "K", 105, 20480, 128, 8, 35, 3, 280, 280, 1, "full", 49.05 },
    { "530B",  "K", 105, 20480, 128, 8, 35, 3, 280, 280, 1, "sel", 37.83 },
    { "1T",    "K", 128, 25600, 160, 8, 64, 1, 512, 512, 1, "full", 94.42 },
    { "1T",    "K", 128, 25600, 160, 8, 64, 1, 512, 512, 1, "sel", 71.49 },
    { "1.7B",  "N", 24, 2304, 24, 1, 1, 1, 32, 512, 1, "full", nil, 137 },
    { "3.6B",  "N", 30, 3072, 32, 2, 1, 1, 64, 512, 1, "full", nil, 138 },
    { "7.5B",  "N", 36, 4096, 32, 4, 1, 1, 128, 512, 1, "full", nil, 142 },
    { "18B",   "N", 40, 6144, 48, 8, 1, 1, 256, 1024, 1, "full", nil, 135 },
    { "39B",   "N", 48, 8192, 64, 8, 2, 1, 512, 1536, 1, "full", nil, 138 },
    { "76B",   "N", 60, 10240, 80, 8, 4, 1, 1024, 1792, 1, "full", nil, 140 },
    { "145B",  "N", 80, 12288, 96, 8, 8, 1, 1536, 2304, 1, "full", nil, 148 },
    { "310B",  "N", 96, 16384, 128, 8, 16, 1, 1920, 2160, 1, "full", nil, 155 },
    { "530B",  "N", 105, 20480, 128, 8, 35, 1, 2520, 2520, 1, "full", nil, 163 },
    { "1T",    "N", 128, 25600, 160, 8, 64, 1, 3072, 3072, 1, "full", nil, 163 },
}

local SEQ, VOCAB = 2048, 51200

-- Narayanan et al. 2021 eq. 3: FLOPs per iteration with recomputation.
local function narayanan_flops(B, l, h)
    return 96.0 * B * SEQ * l * h * h * (1 + SEQ / (6 * h) + VOCAB / (16 * l * h)) -- floats: no overflow
end

local errs = { K = {}, N = {} }
print(string.format("%-6s %-3s %-22s %9s %9s %8s", "model", "src", "tp/pp/dp/v, mode",
    "published", "pipesim", "error"))
for _, c in ipairs(CASES) do
    local name, src, l, h, a, tp, pp, v, gpus, B, mbs, mode, secs, tflops = table.unpack(c)
    if not secs then secs = narayanan_flops(B, l, h) / (gpus * tflops * 1e12) end
    local cluster = ps.cluster(ps.clusters.dgx("A100", (gpus + 7) // 8))
    local flags = {
        num_layers = l, hidden_size = h, num_attention_heads = a, seq_length = SEQ,
        vocab_size = VOCAB, fp16 = true, micro_batch_size = mbs, global_batch_size = B,
        world_size = gpus, tensor_model_parallel_size = tp, pipeline_model_parallel_size = pp,
        num_layers_per_virtual_pipeline_stage = v > 1 and l // (pp * v) or nil,
        sequence_parallel = mode == "sel" and tp > 1 or nil,
        recompute_granularity = mode == "sel" and "selective" or "full",
        recompute_method = mode == "full" and "uniform" or nil,
        -- the 2021-22 Megatron-LM: its own unfused attention (scaled,
        -- masked softmax fused), before Transformer Engine's fused kernel,
        -- Megatron-Core's default today
        transformer_impl = "local",
        cluster = cluster, record = "summary",
        name = string.format("%s %s %s", src, name, mode),
    }
    local run = ps.models.megatron(flags)
    local r = ps.run(run)
    local err = (r.makespan - secs) / secs
    errs[src][#errs[src] + 1] = err
    local layout = string.format("%d/%d/%d/%d, %s", tp, pp, run.dp, v,
        mode == "sel" and "SP+selective" or "full")
    print(string.format("%-6s %-3s %-22s %8.2fs %8.2fs %+7.1f%%", name, src, layout, secs,
        r.makespan, 100 * err))
end

local stats = V.stats -- mean and max of |error|
for _, src in ipairs { "K", "N" } do
    if #errs[src] > 0 then
        local mean, max = stats(errs[src])
        print(string.format("%s: %d runs, mean |error| %.1f%%, max %.1f%%", src, #errs[src],
            100 * mean, 100 * max))
    end
end
local all = {}
for _, src in ipairs { "K", "N" } do
    for _, e in ipairs(errs[src]) do all[#all + 1] = e end
end
local mean, max = stats(all)
print(string.format("all: %d runs, mean |error| %.1f%%, max %.1f%%", #all, 100 * mean, 100 * max))
