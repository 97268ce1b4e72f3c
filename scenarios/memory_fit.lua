-- Published runs that happened must fit: each run's flags as published,
-- its largest per-rank peak against the device's memory, and its step
-- against the published one (docs/parallelism.md "Memory"). `-D quick=1`
-- (the test suite) leaves out Llama 3 405B on 4,096+ H100 (90 s here).
-- The other published runs of docs/fidelity.md fit in their own
-- scenarios: GPT-3 175B and Nemotron-4 340B FP8 on 128 H100
-- (nemo_validation.lua), the Llama 3.1 CP 2 runs (cp_validation.lua).
local ps = require "pipesim"
ps.progress(false)

local quick = ps.args.quick

-- Llama 3 / 3.1 405B: 126 x 16384, 128 heads in 8 query groups, SwiGLU
-- of 53248, RMSNorm, RoPE, no biases, untied, vocabulary 128,256,
-- sequence 8192, no dropout (Meta's model has none; Megatron-Bridge's
-- Llama3ModelProvider: attention_dropout = hidden_dropout = 0.0); PP 16
-- with the embedding and the loss each in a layer's place
-- (account_for_*_in_pipeline_split), sequence parallel, bf16.
local function llama405(extra)
    local f = {
        num_layers = 126, hidden_size = 16384, ffn_hidden_size = 53248,
        num_attention_heads = 128, group_query_attention = true, num_query_groups = 8,
        swiglu = true, normalization = "RMSNorm", position_embedding_type = "rope",
        disable_bias_linear = true, untie_embeddings_and_output_weights = true,
        seq_length = 8192, max_position_embeddings = 8192, vocab_size = 128256,
        attention_dropout = 0, hidden_dropout = 0, bf16 = true, sequence_parallel = true,
        pipeline_model_parallel_size = 16, account_for_embedding_in_pipeline_split = true,
        account_for_loss_in_pipeline_split = true, micro_batch_size = 1,
    }
    for k, v in pairs(extra) do f[k] = v end
    return f
end

-- name, GPUs, published seconds a step (nil: none), build() -> ps.run spec
local ROWS = {
    -- Megatron-Bridge 25.11 (docs/performance-summary.md, v0.2.1):
    -- LLAMA3.1_405B on 256 GB200, FP8-CS, GBS 1536, TP 4, PP 16, VP 4,
    -- 813 tokens/s/GPU. Recipe (commit d419154,
    -- scripts/performance/configs/llama/llama31_workload_base_configs.py
    -- LLAMA31_405B_PRETRAIN_CONFIG_GB200_FP8_CS_V2, llama31_llm_pretrain.py,
    -- src/megatron/bridge/recipes/llama/llama3.py): no recompute, no
    -- Megatron-FSDP, grad_reduce_in_fp32 = False, TP overlap, the
    -- distributed optimizer overlapped; bf16_with_fp8_current_scaling_mixed:
    -- hybrid, tensorwise, first and last layer in BF16, FP8 parameters;
    -- the perf recipes' TE cross-entropy.
    { "Llama 3.1 405B FP8-CS, Megatron-Bridge", 256, 1536 * 8192 / (256 * 813), function()
        local f = llama405 {
            tensor_model_parallel_size = 4, num_virtual_stages_per_pipeline_rank = 4,
            global_batch_size = 1536, world_size = 256, tp_comm_overlap = true,
            use_distributed_optimizer = true, overlap_grad_reduce = true,
            overlap_param_gather = true, grad_reduce_in_bf16 = true,
            cross_entropy_loss_fusion = true, cross_entropy_fusion_impl = "te",
            fp8_format = "hybrid", fp8_recipe = "tensorwise", fp8_param_gather = true,
            first_last_layers_bf16 = true, num_layers_at_start_in_bf16 = 1,
            num_layers_at_end_in_bf16 = 1,
        }
        f.cluster = ps.cluster(ps.clusters.dgx("GB200", 4))
        return ps.models.megatron(f)
    end },
    -- NVIDIA/dgxc-benchmarking v25.02 (commit 8f5cbb3), nemotron/
    -- configure.sh for 340b BF16: TP 8, PP 8, CP 2, VP 12, MBS 1, GBS 2 x
    -- nodes, TP overlap, SP; nemotron4-340b-synth.yaml: 96 x 18432, 96
    -- heads in 8 groups, squared ReLU of 4h, LayerNorm (1p), RoPE on half
    -- the head, no biases, no dropout, untied, vocabulary 256,000, sequence
    -- 4096, selective recompute, NeMo's distributed Adam with bf16 state
    -- and gradient sync (the precision-aware optimizer with bf16 moments,
    -- as nemo_validation.lua maps it). README_340b.md: 4.61 s a step.
    { "Nemotron-4 340B BF16 CP 2, dgxc", 128, 4.61, function()
        return ps.models.megatron {
            num_layers = 96, hidden_size = 18432, ffn_hidden_size = 4 * 18432,
            num_attention_heads = 96, group_query_attention = true, num_query_groups = 8,
            squared_relu = true, seq_length = 4096, max_position_embeddings = 4096,
            vocab_size = 256000, bf16 = true, position_embedding_type = "rope",
            untie_embeddings_and_output_weights = true, disable_bias_linear = true,
            attention_dropout = 0, hidden_dropout = 0, sequence_parallel = true,
            tp_comm_overlap = true, use_distributed_optimizer = true,
            overlap_grad_reduce = true, overlap_param_gather = true,
            cross_entropy_loss_fusion = true, micro_batch_size = 1, global_batch_size = 32,
            world_size = 128, tensor_model_parallel_size = 8,
            pipeline_model_parallel_size = 8, context_parallel_size = 2,
            num_virtual_stages_per_pipeline_rank = 12, recompute_granularity = "selective",
            grad_reduce_in_bf16 = true, use_precision_aware_optimizer = true,
            main_grads_dtype = "bf16", exp_avg_dtype = "bf16", exp_avg_sq_dtype = "bf16",
            cluster = ps.cluster(ps.clusters.dgx("H100", 16)),
        }
    end },
}

-- Llama 3 405B as Meta ran it (Dubey et al. 2024, "The Llama 3 Herd of
-- Models", Table 4 and Sec. 3.3): 16,384 H100 as TP 8, CP 1, PP 16, DP
-- 128, batch size per DP 16 (16 microbatches of one sequence); the
-- interleaved schedule with the first and last stage one layer fewer,
-- "the first model chunk on the first stage has only the embedding": one
-- layer a virtual stage; no activation checkpointing; FSDP sharding the
-- optimizer state and gradients, the weights kept whole from the forward
-- to the backward (pipesim's zero = 2), gradients accumulated and
-- reduce-scattered in FP32 (Sec. 3.3.4): 2 + (4 + 12)/N bytes a
-- parameter. 126 layers on H100s 16 to a pipeline. Simulated at DP
-- `dp` (default 32, 4,096 GPUs: ZeRO-2's reduce-scatter of every
-- microbatch makes DP 128 about 7.6 GiB of programs and several minutes
-- here); the activations do not depend on DP and the static bytes shrink
-- with it (ps.sharding.model_states), so DP 128 needs less than DP 32.
if not quick then
    local dp = math.tointeger(ps.args.dp) or 32
    ROWS[#ROWS + 1] = { string.format("Llama 3 405B, Meta (DP %d)", dp), 128 * dp, nil, function()
        local f = llama405 {
            tensor_model_parallel_size = 8, num_layers_per_virtual_pipeline_stage = 1,
            global_batch_size = 16 * dp, world_size = 128 * dp, overlap_grad_reduce = true,
        }
        f.cluster = ps.cluster(ps.clusters.dgx("H100", 16 * dp))
        local run = ps.models.megatron(f)
        run.zero = 2
        return run
    end }
end

local results = {} -- returned, for tests/lua/test_memory.lua
print(string.format("%-40s %6s %9s %9s %7s %8s %8s %6s", "run", "GPUs", "published", "pipesim",
    "error", "peak GB", "of GB", "fits"))
for _, row in ipairs(ROWS) do
    local name, gpus, secs, build = table.unpack(row)
    local run = build()
    run.record, run.name = "summary", name
    local r = ps.run(run)
    local peak = 0
    for _, b in ipairs(r.peak_memory) do peak = math.max(peak, b) end
    local cap = run.cluster.memory
    results[#results + 1] = { name = name, pipesim = r.makespan, peak = peak, fits = r.fits }
    print(string.format("%-40s %6d %9s %8.3fs %7s %8.2f %8.1f %6s", name, gpus,
        secs and string.format("%.3fs", secs) or "-", r.makespan,
        secs and string.format("%+.1f%%", 100 * (r.makespan - secs) / secs) or "-",
        peak / 1e9, cap / 1e9, tostring(r.fits)))
end
return results
