-- How close to reality, mixture of experts: NVIDIA's published MoE training
-- runs (Megatron-Bridge's performance summary), each row's model FLOPs per
-- token as the publisher counts them against pipesim's. Prints the table of
-- docs/moe.md's "How close to reality".
--
-- Source: NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md (the
-- 26.08 NeMo container) and docs/performance-summary-archive.md (26.06,
-- 26.02, 25.11), commit 067f987 (2026-08-22): pre-training, "we
-- force-balance the token distribution among experts and all benchmarks are
-- token-dropless". Each row publishes tokens/s/GPU and model TFLOP/s/GPU,
-- the latter from Megatron-Bridge's flop_utils.py (Megatron-LM's
-- num_floating_point_operations); their ratio is the publisher's model
-- FLOPs per token, which pipesim's efficiency figures (the same formula,
-- models/moe.lua's presets at the run's sequence length) must give. Both
-- figures are printed as integers: a row agrees when its error is within
-- that rounding (0.5 / TFLOP/s + 0.5 / tokens/s).
--
-- DeepSeek-V3 rows run with one MTP layer (Megatron-Bridge's recipe,
-- recipes/deepseek/h100/deepseek_v3.py: mtp_num_layers = 1) unless the
-- table says "w/o MTP". GPT-OSS alternates sliding-window (128 tokens) and
-- full attention; Megatron-Bridge counts the windowed layers' core at their
-- average context, pipesim counts every layer's as full causal attention
-- (not modelled: docs/moe.md), so its FLOPs per token are larger by the
-- gap printed in the note.
--
-- Not here yet: the step time of each run. The rows carry their parallel
-- plans (TP, PP, VP, EP, micro and global batch) for when ps.run times MoE
-- blocks (expert parallelism: docs/moe.md).
local ps = require "pipesim"
local efficiency = require "pipesim.efficiency"

-- preset, MTP layers, release, system, GPUs, precision, global batch,
-- micro batch, sequence, TP, PP, VP (1: none), EP, tokens/s/GPU, model
-- TFLOP/s/GPU, and what the row's publisher says or does differently
local RUNS = {
    { "deepseek-v3", 1, "26.08", "GB200", 256, "MXFP8", 4096, 1, 4096, 1, 4, 4, 64, 4912, 1276 },
    { "deepseek-v3", 0, "25.11", "GB300", 256, "BF16", 4096, 1, 4096, 1, 2, 4, 32, 3848, 961 },
    { "deepseek-v3", 1, "25.11", "B200", 256, "MXFP8", 2048, 1, 4096, 1, 16, 1, 8, 2139, 557 },
    { "kimi-k2", 0, "26.06", "GB300", 256, "MXFP8", 4096, 2, 4096, 1, 4, 4, 64, 5372, 1099 },
    { "qwen3-235b-a22b", 0, "26.08", "GB200", 256, "MXFP8", 8192, 1, 4096, 1, 8, 3, 32, 7280, 1077 },
    { "qwen3-235b-a22b", 0, "26.02", "H100", 256, "FP8", 8192, 1, 4096, 2, 8, 4, 32, 1633, 242 },
    { "qwen3-30b-a3b", 0, "26.08", "GB200", 8, "MXFP8", 512, 4, 4096, 1, 1, 1, 8, 39936, 923 },
    { "qwen3-30b-a3b", 0, "26.06", "H100", 16, "FP8", 1024, 1, 4096, 1, 1, 1, 16, 8826, 203 },
    { "gpt-oss-120b", 0, "26.08", "GB200", 64, "MXFP8", 1280, 4, 4096, 1, 1, 1, 64, 28672, 934 },
    { "gpt-oss-120b", 0, "26.02", "H100", 64, "BF16", 1280, 1, 4096, 1, 4, 1, 8, 5993, 163,
      "26.02 counts 16% fewer FLOPs per token than 26.08 for the same model and sequence" },
}

-- GPT-OSS's sliding window and which layers use it (its config.json:
-- sliding_window 128, layer_types alternating sliding and full from the
-- first): Megatron-Bridge's FLOPs of the windowed layers' core, 6 x 2 q
-- ctx per token with ctx = w - w (w - 1) / (2 s), against full causal
-- attention's 6 x q s.
local function window_gap(layers, s)
    local sh = layers[2].shape
    local q, w, windowed = sh.heads * sh.head_dim, 128, sh.layers // 2
    local ctx = w - w * (w - 1) / (2 * s)
    return windowed * 6 * q * (s - 2 * ctx)
end

print("| model | release, system, GPUs, precision | TP/PP/VP/EP, MBS, GBS | published tok/s, "
    .. "TFLOP/s per GPU | GFLOP per token: published | pipesim | error | note |")
print("|---|---|---|---|---|---|---|---|")
local sum, worst, n = 0, 0, 0
for _, r in ipairs(RUNS) do
    local name, mtp, release, system, gpus, precision, gbs, mbs, s, tp, pp, vp, ep, tok, tf, says =
        table.unpack(r)
    local layers = ps.models.preset(name, { seq = s, microbatch = mbs, mtp_layers = mtp })
    local f = efficiency.figures({ layers = layers }, nil, nil)
    local mine, published = f.model_flops / f.tokens, tf * 1e12 / tok
    local err = mine / published - 1
    local note = math.abs(err) <= 0.5 / tf + 0.5 / tok and "within the rounding" or ""
    if name:find("gpt-oss", 1, true) then
        local gap = window_gap(layers, s)
        note = says or string.format("sliding window: pipesim counts %.2f GFLOP more (%+.2f%% without)",
            gap / 1e9, ((f.model_flops / f.tokens - gap) / published - 1) * 100)
    else
        sum, worst, n = sum + math.abs(err), math.max(worst, math.abs(err)), n + 1
    end
    print(string.format("| %s%s | %s, %s, %d, %s | %d/%d/%s/%d, %d, %d | %d, %d | %.2f | %.2f | %+.2f%% | %s |",
        name, mtp == 0 and name == "deepseek-v3" and " (w/o MTP)" or "", release, system, gpus,
        precision, tp, pp, vp > 1 and tostring(vp) or "-", ep, mbs, gbs, tok, tf, published / 1e9,
        mine / 1e9, err * 100, note))
end
print(string.format("\n%d rows but GPT-OSS's: mean |error| %.2f%%, max %.2f%%", n, sum / n * 100,
    worst * 100))
