-- Context parallelism against published steps: NVIDIA's Llama 3.1 runs
-- with CP 2 on DGX H100, against pipesim's prediction with the default
-- device presets (never fitted to these rows). Prints the table of
-- docs/parallelism.md's "Validation"; `-D quick=1` (the test suite) runs
-- the first row.
--
-- Source: NVIDIA/dgxc-benchmarking v25.02 (commit 8f5cbb3, NeMo 24.12
-- container), llama3.1/README_8b.md and README_70b.md, "Training step time
-- (seconds per step)" on 8 and 64 H100; the configurations are the
-- recipes' YAML files (llama3.1/llama3.1_8b.yaml, llama3.1_70b.yaml) with
-- configure.sh's overrides (fp8, fp8_hybrid, +fp8_params for FP8;
-- NVTE_FUSED_ATTN=1), mapped flag by flag to Megatron-LM's names (NeMo
-- 1.0's YAML keys are Megatron's). NeMo's cp_comm_type is Megatron's
-- default, p2p.
local ps = require "pipesim"

local quick = ps.args.quick

-- Llama 3.1: RMSNorm, SwiGLU, RoPE, no biases, no dropout, untied
-- (share_embeddings_and_output_weights: false), vocabulary 128,256 padded
-- to 128 x tp, sequence 8192, 8 query groups; the fused cross-entropy;
-- NeMo's distributed Adam overlapped (overlap_grad_sync,
-- overlap_param_sync) with bf16 gradient reduction (grad_sync_dtype:
-- bf16); FP8: hybrid, delayed scaling, FP8 parameters.
local function llama31(L, h, ffn, heads, fp8)
    return {
        num_layers = L, hidden_size = h, ffn_hidden_size = ffn, num_attention_heads = heads,
        group_query_attention = true, num_query_groups = 8, swiglu = true, seq_length = 8192,
        max_position_embeddings = 8192, vocab_size = 128256, bf16 = true,
        position_embedding_type = "rope", normalization = "RMSNorm",
        untie_embeddings_and_output_weights = true, disable_bias_linear = true,
        attention_dropout = 0, hidden_dropout = 0, cross_entropy_loss_fusion = true,
        micro_batch_size = 1, global_batch_size = 128, context_parallel_size = 2,
        use_distributed_optimizer = true, overlap_grad_reduce = true,
        overlap_param_gather = true, grad_reduce_in_bf16 = true,
        fp8_format = fp8 and "hybrid" or nil, fp8_param_gather = fp8 or nil,
    }
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

-- name, nodes, flags, published seconds per step
local ROWS = {
    { "Llama 3.1 8B BF16", 1, llama8(false), 12.78 },
    { "Llama 3.1 8B FP8", 1, llama8(true), 9.44 },
    { "Llama 3.1 70B BF16", 8, llama70(false), 14.61 },
    { "Llama 3.1 70B FP8", 8, llama70(true), 10.46 },
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
return results
