-- Efficiency figures of a training step (issue 27 item 16,
-- lua/pipesim/efficiency.lua, docs/efficiency.md): Megatron-LM's model
-- FLOPs against closed forms and NeMo's formula, MFU of GPT-3 175B on
-- 1,024 A100 against the hand computation a newcomer had to do, hardware
-- FLOPs with each recompute mode, and the figures plain layers can and
-- cannot give.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local E = require "pipesim.efficiency"
local T = require "pipesim.models.transformer"

-- GPT (heads = query groups, GeLU MLP of 4h): Megatron's count is
-- 72 B s L h^2 (1 + s/(12 h) + V/(12 L h)) with causal attention halved
-- (Narayanan et al. 2021's 72 B s L h^2 (1 + s/(6h) + V/(12 L h)), the
-- full s^2, is larger by 6 B s^2 h L)
do
    local _, s = T.build { layers = 96, hidden = 12288, heads = 96, seq = 2048, vocab = 51200 }
    local B, n, L, h, V = 1536, 2048, 96, 12288, 51200
    local want = 72 * B * n * L * h ^ 2 * (1 + n / (12 * h) + V / (12 * L * h))
    H.near(E.model_flops(s, B, L, true), want, 1e-12, "GPT-3 175B model FLOPs")
    local full = 72 * B * n * L * h ^ 2 * (1 + n / (6 * h) + V / (12 * L * h))
    H.near(full - E.model_flops(s, B, L, true), 6 * B * n ^ 2 * h * L, 1e-9,
        "causal halving: 6 B s^2 h L less than the full s^2")
end

-- Llama 2 7B (SwiGLU, f = 11008): NeMo 2.0's llama2 formula
-- (nemo/utils/flops_formulas.py: B s L h^2 (12 + 12 g/a + 18 f/h + 12 s/h
-- + 6 V/(L h)), the full s^2) less the same 6 B s^2 h L; and with GQA
-- (Llama 2 70B: 64 heads, 8 query groups, f = 28672) the same relation
for _, m in ipairs {
    { layers = 32, hidden = 4096, heads = 32, kv_heads = 32, ffn_hidden = 11008, seq = 4096, vocab = 32000 },
    { layers = 80, hidden = 8192, heads = 64, kv_heads = 8, ffn_hidden = 28672, seq = 4096, vocab = 32000 },
} do
    m.swiglu = true
    local _, s = T.build(m)
    local B, n, L, h, V, a, g, f = 512, m.seq, m.layers, m.hidden, m.vocab, m.heads, m.kv_heads, m.ffn_hidden
    local nemo = B * n * L * h * h * (12 + 12 * g / a + 18 * f / h + 12 * n / h + 6 * V / (L * h))
    H.near(E.model_flops(s, B, L, true), nemo - 6 * B * n * n * h * L, 1e-12,
        string.format("Llama %d layers: NeMo's formula less the causal half", L))
end

-- GPT-3 175B on 1,024 A100 (128 DGX A100): TP 8, PP 8 interleaved (3
-- layers per virtual stage), DP 16, micro batch 1, global batch 1536,
-- sequence parallelism and selective recompute, bf16. The MFU a newcomer
-- computed by hand (52.6% on the pipesim of the day) is the run's own
-- figure now, to 1e-9 of the same hand computation.
do
    local c = ps.cluster(ps.clusters.dgx("a100", 128))
    local run = ps.models.megatron {
        num_layers = 96, hidden_size = 12288, num_attention_heads = 96, seq_length = 2048,
        vocab_size = 50257, bf16 = true, micro_batch_size = 1, global_batch_size = 1536,
        world_size = 1024, tensor_model_parallel_size = 8, pipeline_model_parallel_size = 8,
        num_layers_per_virtual_pipeline_stage = 3, sequence_parallel = true,
        recompute_granularity = "selective", use_distributed_optimizer = true, cluster = c,
        record = "summary", name = "gpt3-175b a100 x1024",
    }
    local r = ps.run(run)
    local e = r.efficiency
    local B, n, L, h = 1536, 2048, 96, 12288
    local V = 51200 -- 50257 padded to a multiple of 128 x 8 (Megatron)
    local F = 72 * B * n * L * h ^ 2 * (1 + n / (12 * h) + V / (12 * L * h))
    local Tstep, gpus, peak = r.makespan, 1024, 312e12
    H.eq(e.gpus, gpus, "gpus = tp x pp x dp")
    H.eq(e.precision, "bf16")
    H.eq(e.peak_flops, peak, "A100's dense BF16 peak")
    H.near(e.model_flops, F, 1e-12, "model FLOPs per step")
    H.near(e.mfu, F / (Tstep * gpus * peak), 1e-9, "MFU = model FLOP/s over 1024 x 312 TFLOP/s")
    H.near(e.model_tflops_per_gpu, F / (Tstep * gpus) / 1e12, 1e-9, "model TFLOP/s per GPU")
    H.near(e.tokens_per_s_per_gpu, B * n / (Tstep * gpus), 1e-9, "tokens/s per GPU")
    -- selective recompute repeats the attention core: 2 x (s/2) x h x 2
    -- FLOPs per token and layer, forward only
    H.near(e.hardware_flops, F + 2 * B * n * n * h * L, 1e-12, "hardware FLOPs, selective")
    H.check(e.mfu > 0.4 and e.mfu < 0.6, "MFU in Megatron's published range: " .. e.mfu)
    H.eq(e.note, nil, "nothing missing")
    print(string.format("GPT-3 175B on 1024 A100 (TP 8, PP 8 x 4 chunks, DP 16, SP + selective, "
        .. "batch 1536): step %.3f s, MFU %.2f%%, %.1f model TFLOP/s per GPU, %.1f hardware, "
        .. "%.1f tokens/s per GPU", Tstep, 100 * e.mfu, e.model_tflops_per_gpu,
        e.hardware_tflops_per_gpu, e.tokens_per_s_per_gpu))
end

-- full recompute: method uniform repeats every block's forward; method
-- block the first k blocks of each stage chunk
do
    local c = ps.cluster(ps.clusters.dgx("h100", 1))
    local base = {
        num_layers = 8, hidden_size = 1024, num_attention_heads = 16, seq_length = 1024,
        vocab_size = 32000, bf16 = true, micro_batch_size = 1, global_batch_size = 8,
        world_size = 2, pipeline_model_parallel_size = 2, cluster = c, record = "none",
    }
    local function with(t)
        local a = {}
        for k, v in pairs(base) do a[k] = v end
        for k, v in pairs(t) do a[k] = v end
        return ps.run(ps.models.megatron(a)).efficiency
    end
    local _, s = T.build { layers = 8, hidden = 1024, heads = 16, seq = 1024, vocab = 32000 }
    local tokens = 8 * 1024
    local none = with {}
    H.near(none.hardware_flops, none.model_flops, 1e-15, "no recompute: hardware = model")
    local uni = with { recompute_granularity = "full", recompute_method = "uniform", recompute_num_layers = 2 }
    H.near(uni.hardware_flops - uni.model_flops, tokens * 8 * E.block_token_flops(s), 1e-12,
        "uniform: 8 blocks again")
    local blk = with { recompute_granularity = "full", recompute_method = "block", recompute_num_layers = 1 }
    H.near(blk.hardware_flops - blk.model_flops, tokens * 2 * E.block_token_flops(s), 1e-12,
        "block, k = 1: one block per stage again")
    H.near(uni.model_flops, none.model_flops, 1e-15, "recompute leaves model FLOPs alone")
    -- fp32 (Megatron's default precision): no dense peak given, no MFU
    local r32 = ps.run(ps.models.megatron((function()
        local a = {}
        for k, v in pairs(base) do a[k] = v end
        a.bf16 = nil
        return a
    end)()))
    local fp32 = r32.efficiency
    H.eq(fp32.precision, "fp32")
    H.eq(fp32.mfu, nil, "fp32: no MFU")
    H.eq(fp32.note, "no MFU: the device has no fp32 dense peak")
    -- the precision changes the time, not the FLOPs: the rates still given
    H.near(fp32.model_flops, none.model_flops, 1e-15, "fp32: the same model FLOPs")
    H.near(fp32.model_tflops_per_gpu, fp32.model_flops / (r32.makespan * 2) / 1e12, 1e-12,
        "fp32: model TFLOP/s per GPU over 2 GPUs")
end

-- FP8: the precision comes from an fp8 field; its peak is the device's
-- fp8_flops (M.PEAK_FIELD), else MFU stays NULL and the note says so
do
    local layers, s = T.build { layers = 2, hidden = 256, heads = 4, seq = 128, vocab = 1000 }
    local fp8 = {}
    for k, v in pairs(s) do fp8[k] = v end
    fp8.fp8 = "hybrid"
    for _, l in ipairs(layers) do l.shape = fp8 end
    local spec = { layers = layers, stages = 1, microbatches = 4 }
    local t = E.figures(spec, { #layers }, { flops = 989e12, fp8_flops = 1979e12 })
    H.eq(t.precision, "fp8")
    H.eq(t.peak_flops, 1979e12, "fp8 takes the device's fp8_flops")
    t = E.figures(spec, { #layers }, { flops = 989e12 })
    H.eq(t.peak_flops, nil)
    H.eq(t.note, "no MFU: the device has no fp8 dense peak")
    -- bf16 on the same device: the dense BF16 peak
    for _, l in ipairs(layers) do l.shape = s end
    H.eq(E.figures(spec, { #layers }, { flops = 989e12, fp8_flops = 1979e12 }).peak_flops, 989e12)
    -- device_peaks parses unit strings and sees per-rank peaks
    H.eq(E.device_peaks { device = { flops = "989 TFLOPS" } }.flops, 989e12)
    H.eq(E.device_peaks { device = { flops = 1e15 }, devices = { [3] = { flops = 5e14 } } }.mixed, true)
    H.eq(E.device_peaks { link = {} }, nil, "no device")
end

-- plain layers: FLOPs from fwd_flops (backward twice, or as given), no
-- tokens; layers given by time: no FLOP figures at all
do
    local c = ps.cluster { ranks = 4, device = { flops = "312 TFLOPS", efficiency = 0.5 },
                           link = { bandwidth = "100 GB/s", latency = "2 us" } }
    local L = {}
    for i = 1, 8 do L[i] = { fwd_flops = 1e12, act_bytes = "1 GiB", out_bytes = "16 MiB" } end
    L[8].bwd_flops = "3 TFLOP"
    local r = ps.run { cluster = c, layers = L, stages = 4, microbatches = 8, dp = 1,
                       checkpoint = true, record = "none" }
    local e = r.efficiency
    local per_mb = 8e12 + 7 * 2e12 + 3e12
    H.near(e.model_flops, 8 * per_mb, 1e-15, "plain: (fwd + bwd) x microbatches")
    H.near(e.hardware_flops, 8 * per_mb + 8 * 8e12, 1e-15, "checkpoint: the forward again")
    H.eq(e.tokens, nil, "plain: no tokens")
    H.eq(e.tokens_per_s_per_gpu, nil)
    -- integer FLOP counts whose step total passes 2^63 (Llama 3 405B's
    -- ~4e18 a step on 256 GPUs overflowed to a negative model_flops)
    local big = {}
    for i = 1, 4 do big[i] = { fwd_flops = math.tointeger(1e17), act_bytes = 0 } end
    local rb = ps.run { cluster = c, layers = big, stages = 4, microbatches = 16, dp = 1,
                        record = "none" }
    H.near(rb.efficiency.model_flops, 16 * 4 * 3e17, 1e-15, "integer FLOPs past 2^63")
    H.near(e.mfu, 8 * per_mb / (r.makespan * 4 * 312e12), 1e-9, "MFU against the device's flops")
    H.eq(e.note, "plain layers: FLOPs from fwd_flops, no tokens without a sequence length, "
        .. "MFU against the device's flops")
    local Tl = {}
    for i = 1, 4 do Tl[i] = { fwd_time = 0.01 } end
    local t = ps.run { cluster = c, layers = Tl, stages = 4, microbatches = 4, record = "none" }.efficiency
    H.eq(t.model_flops, nil, "time layers: no FLOPs")
    H.eq(t.mfu, nil)
    H.eq(t.note, "no FLOP figures, layers given by time carry no FLOPs")
    H.eq(t.gpus, 4)
    -- ranks of different peaks: no single peak to divide by
    local mixed = ps.cluster { ranks = 4, device = { flops = "312 TFLOPS" },
                               devices = { [2] = { flops = "156 TFLOPS" } },
                               link = { bandwidth = "100 GB/s" } }
    local m = ps.run { cluster = mixed, layers = L, stages = 4, microbatches = 4, record = "none" }.efficiency
    H.eq(m.mfu, nil, "mixed devices: no MFU")
    H.check(m.note:find("ranks have devices of different peaks", 1, true) ~= nil, m.note)
end

H.done()
