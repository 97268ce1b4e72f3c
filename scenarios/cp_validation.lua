-- Context parallelism against published steps, against pipesim's
-- prediction with the default device presets (never fitted to these
-- rows). Prints the two tables of docs/parallelism.md's "Validation";
-- `-D quick=1` (the test suite) runs the first row of each.
--
-- 1. NVIDIA's Llama 3.1 runs with CP 2 on DGX H100.
-- Source: NVIDIA/dgxc-benchmarking v25.02 (commit 8f5cbb3, NeMo 24.12
-- container), llama3.1/README_8b.md, README_70b.md and README_405b.md,
-- "Training step time (seconds per step)" on 8, 64 and 576 H100 (the
-- 405B's full-model scale, its smallest; the smaller ones are proxies with
-- fewer layers); the configurations are the recipes' YAML files
-- (llama3.1/llama3.1_8b.yaml, llama3.1_70b.yaml, llama3.1_405b.yaml) with
-- configure.sh's overrides (fp8, fp8_hybrid, +fp8_params for FP8;
-- NVTE_FUSED_ATTN=1), mapped flag by flag to Megatron-LM's names (NeMo
-- 1.0's YAML keys are Megatron's). NeMo's cp_comm_type is Megatron's
-- default, p2p.
local ps = require "pipesim"
local V = require "pipesim.validation"

local quick = ps.args.quick

-- Llama 3.1: RMSNorm, SwiGLU, RoPE, no biases, no dropout, untied
-- (share_embeddings_and_output_weights: false), vocabulary 128,256 padded
-- to 128 x tp, sequence 8192, 8 query groups; the fused cross-entropy;
-- NeMo's distributed Adam overlapped (overlap_grad_sync,
-- overlap_param_sync) with bf16 gradient reduction (grad_sync_dtype:
-- bf16); FP8: hybrid, delayed scaling, FP8 parameters.
local function llama31(L, h, ffn, heads, fp8)
    return V.llama3(L, h, ffn, heads, { global_batch_size = 128, context_parallel_size = 2,
        fp8_format = fp8 and "hybrid" or nil, fp8_param_gather = fp8 or nil })
end

-- 8B (llama3.1_8b.yaml): 32 x 4096, 32 heads, SwiGLU of 14336; TP 1, PP 1,
-- CP 2, MBS 1, GBS 128 on 8 GPUs (dp 4, 32 microbatches).
local function llama8(fp8)
    local f = llama31(32, 4096, 14336, 32, fp8)
    f.world_size = 8
    return f
end

-- 70B (llama3.1_70b.yaml): 80 x 8192, 64 heads, SwiGLU of 28672; TP 4,
-- PP 4, VP 5, CP 2, MBS 1, GBS 128 on 64 GPUs (dp 2, 64 microbatches);
-- sequence parallel and TE's userbuffer TP overlap (ub_tp_comm_overlap).
-- Left out: defer_embedding_wgrad_compute (refused by pipesim, not
-- modelled: it moves the embedding's weight gradient off the last
-- microbatch's critical path).
local function llama70(fp8)
    local f = llama31(80, 8192, 28672, 64, fp8)
    f.world_size = 64
    f.tensor_model_parallel_size, f.pipeline_model_parallel_size = 4, 4
    f.num_virtual_stages_per_pipeline_rank = 5
    f.sequence_parallel, f.tp_comm_overlap = true, true
    return f
end

-- 405B (llama3.1_405b.yaml of the same commit): 126 x 16384, 128 heads,
-- 16 query groups, SwiGLU of 53248; TP 8, PP 9, VP 7, CP 2, MBS 1, GBS 252
-- on 576 GPUs (dp 4, 63 microbatches: README_405b.md's "GA=63"); the
-- recipe's tokenizer is GPT2BPETokenizer ("uses the GPT2BPETokenizer as a
-- proxy"), a 50,257-word vocabulary padded to 128 x tp; sequence parallel,
-- TE's userbuffer TP overlap; overlap_p2p_comm as Megatron's default for
-- interleaving. Left out as for 70B: defer_embedding_wgrad_compute.
local function llama405(fp8)
    local f = llama31(126, 16384, 53248, 128, fp8)
    f.num_query_groups, f.vocab_size = 16, 50257
    f.world_size, f.global_batch_size = 576, 252
    f.tensor_model_parallel_size, f.pipeline_model_parallel_size = 8, 9
    f.num_virtual_stages_per_pipeline_rank = 7
    f.sequence_parallel, f.tp_comm_overlap = true, true
    return f
end

-- name, nodes, flags, published seconds per step
local ROWS = {
    { "Llama 3.1 8B BF16", 1, llama8(false), 12.78 },
    { "Llama 3.1 8B FP8", 1, llama8(true), 9.44 },
    { "Llama 3.1 70B BF16", 8, llama70(false), 14.61 },
    { "Llama 3.1 70B FP8", 8, llama70(true), 10.46 },
    { "Llama 3.1 405B BF16", 72, llama405(false), 17.50 },
    { "Llama 3.1 405B FP8", 72, llama405(true), 11.00 },
}

local results = {} -- returned, for tests
local sum, max = 0, 0
print(string.format("%-20s %-5s %9s %9s %8s %6s", "model (CP 2)", "GPUs", "published", "pipesim",
    "error", "fits"))
for i, row in ipairs(ROWS) do
    if not quick or i == 1 then
        local name, nodes, f, secs = table.unpack(row)
        f.cluster = ps.cluster(ps.clusters.dgx("H100", nodes))
        f.record = "summary"
        f.name = name
        local r = ps.run(ps.models.megatron(f))
        local err = (r.makespan - secs) / secs
        results[#results + 1] = { name = name, published = secs, pipesim = r.makespan,
                                  fits = r.fits, cp = r.cp }
        sum, max = sum + math.abs(err), math.max(max, math.abs(err))
        print(string.format("%-20s %-5d %8.3fs %8.3fs %+7.1f%% %6s", name, 8 * nodes, secs,
            r.makespan, 100 * err, tostring(r.fits)))
    end
end
print(string.format("H100, CP 2: %d runs, mean |error| %.1f%%, max %.1f%%", #results,
    100 * sum / #results, 100 * max))

-- 2. Long sequences: NeMo's Llama 2 7B FP8 runs on DGX H100 from 32K to
-- 1M tokens, CP 2 to 32, 4M tokens a step (the sequence in K times the
-- GPUs is 1,024 K, GBS = 4,096 / K). Source: NVIDIA/NeMo
-- docs/source/performance/performance_long_sequence.md (commit 9421f21,
-- "LLAMA2-7B (FP8) - H100", NeMo 24.03.01 container), the "With CP"
-- columns. It publishes model TFLOPS per GPU, not seconds: a step is
-- F / (TFLOPS x GPUs) with F NeMo's model FLOPs of Llama 2
-- (nemo/utils/flops_formulas.py, llama2(): the attention counted
-- non-causal, 12 s/h). That the 24.03 page used that formula (written
-- for NeMo 2.0's FLOPs callback) is our reading: with the causal count
-- the published seconds would be about half as long at 1M tokens.
-- Not published, so Megatron's defaults: p2p (NeMo 24.03's only type),
-- no recompute, the distributed optimizer overlapped; FP8 hybrid.
local function llama2_7b(k, tp, cp)
    local s = k * 1024
    return {
        num_layers = 32, hidden_size = 4096, ffn_hidden_size = 11008, num_attention_heads = 32,
        swiglu = true, seq_length = s, max_position_embeddings = s, vocab_size = 32000,
        bf16 = true, position_embedding_type = "rope", normalization = "RMSNorm",
        untie_embeddings_and_output_weights = true, disable_bias_linear = true,
        attention_dropout = 0, hidden_dropout = 0, micro_batch_size = 1,
        global_batch_size = 4096 // k, world_size = k, tensor_model_parallel_size = tp,
        sequence_parallel = tp > 1 or nil, context_parallel_size = cp,
        use_distributed_optimizer = true, overlap_grad_reduce = true,
        overlap_param_gather = true, fp8_format = "hybrid",
    }
end
-- NeMo's llama2() FLOPs of one step: gbs s L h^2 (12 + 12 g/a + 18 f/h
-- + 12 s/h + 6 V/(L h))
local function nemo_flops(k)
    local s, h, L = k * 1024, 4096, 32
    return (4096 // k) * s * L * h * h * (12 + 12 + 18 * 11008 / h + 12 * s / h
        + 6 * 32000 / (L * h))
end
-- sequence in K (= GPUs), TP, CP, published TFLOPS per GPU (DP = GPUs /
-- (TP CP), PP 1)
local LONG = {
    { 32, 2, 2, 610 }, { 64, 4, 2, 574 }, { 128, 4, 4, 555 }, { 256, 4, 8, 549 },
    { 512, 8, 16, 549 }, { 1024, 8, 32, 536 },
}
local long = {}
sum, max = 0, 0
print()
print(string.format("%-22s %-5s %9s %9s %8s %6s", "Llama 2 7B FP8", "GPUs", "published", "pipesim",
    "error", "fits"))
for i, row in ipairs(LONG) do
    if not quick or i == 1 then
        local k, tp, cp, tflops = table.unpack(row)
        local name = string.format("%dK tp %d cp %d", k, tp, cp)
        local f = llama2_7b(k, tp, cp)
        f.cluster = ps.cluster(ps.clusters.dgx("H100", k // 8))
        f.record, f.name = "summary", "Llama 2 7B FP8 " .. name
        local r = ps.run(ps.models.megatron(f))
        local secs = nemo_flops(k) / (tflops * 1e12 * k)
        local err = (r.makespan - secs) / secs
        long[#long + 1] = { name = name, published = secs, pipesim = r.makespan, fits = r.fits,
                            cp = r.cp }
        sum, max = sum + math.abs(err), math.max(max, math.abs(err))
        print(string.format("%-22s %-5d %8.3fs %8.3fs %+7.1f%% %6s", name, k, secs, r.makespan,
            100 * err, tostring(r.fits)))
    end
end
print(string.format("H100, long sequences: %d runs, mean |error| %.1f%%, max %.1f%%", #long,
    100 * sum / #long, 100 * max))
results.long = long
return results
