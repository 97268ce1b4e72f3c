-- How close to reality on Hopper and Blackwell: NVIDIA's published NeMo
-- training steps (BF16 and FP8) against pipesim's prediction with the
-- default device presets (one set of datasheet and microbenchmark
-- constants per GPU type, never fitted to these rows). Prints
-- docs/fidelity.md's tables; `-D quick=1` (the test suite) runs three rows.
--
-- Sources, each row's launch script mapped flag by flag to Megatron-LM's
-- names (the NeMo 1.0 YAML keys are Megatron's: mcore_gpt, TE, the same
-- parallel sizes):
--  D: NVIDIA/dgxc-benchmarking v25.02 (commit 8f5cbb3, NeMo 24.12
--     container), nemo_megatron/README_175b.md and nemotron/README_15b.md,
--     README_340b.md: "Training step time (seconds per step)" on DGX H100;
--     the configurations are the recipes' YAML files (nemo_megatron/
--     gpt3_175b_hydra.yaml, nemotron/nemotron4-15b-synth.yaml,
--     nemotron4-340b-synth.yaml) with configure.sh's overrides.
--  G: the same repository, v25.05 (commit 68eaf7e), nemotron/README.md:
--     Nemotron4 340B on 128 GB200 (TP 8, PP 4, VP 12, GBS 32).
--  B: NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md, 25.11
--     container, DGX-B200 and DGX-GB200: LLAMA3_8B on 8 GPUs (tokens /
--     sec / GPU; step = GBS x seq / (GPUs x tokens/s/GPU)).
-- Pending (they need context parallelism or FSDP, not yet in pipesim):
-- Nemotron4 340B BF16 on H100 (configure.sh: CP 2 for BF16), Llama 3.1
-- 8B / 70B / 405B (CP 2), Megatron-Bridge's LLAMA3_70B on GB200 (FSDP).
local ps = require "pipesim"
local V = require "pipesim.validation"

local quick = ps.args.quick

-- GPT-3 175B (gpt3_175b_hydra.yaml): 96 x 12288, 96 heads, GeLU 4h,
-- learned positions, tied embedding, biases, dropout 0.1, GPT-2 BPE
-- (50,257), sequence 2048; TP 4, PP 8, VP 6 (the YAML's; the README's
-- header says 12), MBS 1, GBS 16 x nodes; sequence parallel, TE's
-- userbuffer TP overlap; NeMo's distributed Adam with bf16 gradient sync
-- (grad_sync_dtype: bf16) and overlapped grad/param sync; FP8: hybrid,
-- delayed scaling, FP8 parameters (fp8_params: true).
local function gpt175(fp8)
    return {
        num_layers = 96, hidden_size = 12288, ffn_hidden_size = 49152, num_attention_heads = 96,
        seq_length = 2048, max_position_embeddings = 2048, vocab_size = 50257, bf16 = true,
        micro_batch_size = 1, global_batch_size = 256, world_size = 128,
        tensor_model_parallel_size = 4, pipeline_model_parallel_size = 8,
        num_virtual_stages_per_pipeline_rank = 6, sequence_parallel = true,
        tp_comm_overlap = true, use_distributed_optimizer = true, overlap_grad_reduce = true,
        overlap_param_gather = true, grad_reduce_in_bf16 = true,
        fp8_format = fp8 and "hybrid" or nil, fp8_param_gather = fp8 or nil,
        -- accepted, listed as ignored (as a pasted script would have them)
        lr = 9e-5, min_lr = 9e-6, weight_decay = 0.1, seed = 1234,
        fp8_amax_history_len = fp8 and 1024 or nil, fp8_amax_compute_algo = fp8 and "max" or nil,
    }
end

-- Nemotron-4's architecture (nemotron4-15b-synth.yaml and -340b-synth.yaml):
-- L x h, `heads` heads in 8 query groups, a squared-ReLU MLP of 4h, RoPE on
-- half the head (ignored: its cost is the whole tensor's), LayerNorm with
-- a zero-centred gamma, no biases, no dropout, untied, vocabulary 256,000,
-- sequence 4096; SP, TP overlap, the distributed optimizer overlapped, the
-- fused cross-entropy; FP8: hybrid, delayed, FP8 parameters (+model.
-- fp8_params).
local function nemotron4(L, h, heads, fp8)
    return {
        num_layers = L, hidden_size = h, ffn_hidden_size = 4 * h, num_attention_heads = heads,
        group_query_attention = true, num_query_groups = 8, squared_relu = true,
        seq_length = 4096, max_position_embeddings = 4096, vocab_size = 256000, bf16 = true,
        position_embedding_type = "rope", untie_embeddings_and_output_weights = true,
        disable_bias_linear = true, attention_dropout = 0, hidden_dropout = 0,
        sequence_parallel = true, tp_comm_overlap = true, use_distributed_optimizer = true,
        overlap_grad_reduce = true, overlap_param_gather = true, cross_entropy_loss_fusion = true,
        fp8_format = fp8 and "hybrid" or nil, fp8_param_gather = fp8 or nil,
        rotary_percent = 0.5, apply_layernorm_1p = true,
    }
end

-- Nemotron-4 15B (configure.sh 15b): 32 x 6144, 48 heads; TP 4, MBS 4,
-- GBS 4 x GPUs; Megatron's distributed optimizer (mcore_distributed_optim).
local function nemotron15(fp8)
    local f = nemotron4(32, 6144, 48, fp8)
    f.micro_batch_size, f.global_batch_size, f.world_size = 4, 64, 16
    f.tensor_model_parallel_size = 4
    return f
end

-- Nemotron-4 340B (configure.sh 340b): 96 x 18432, 96 heads; TP 8, PP 8,
-- VP 12, MBS 1, GBS 2 x nodes; selective recompute; NeMo's distributed
-- Adam with bf16 state and gradient sync (dtype: bf16, grad_sync_dtype:
-- bf16), which is Megatron's precision-aware optimizer with bf16 moments
-- (its bf16 master remainder: 2 + 2 + 2 bytes, as Apex's bf16 state). On
-- GB200 (NeMo 2.0's scripts/performance/llm/pretrain_nemotron4_340b.py,
-- PP 4): Megatron's distributed optimizer in fp32 with bf16 gradient
-- reduction and TE's cross-entropy (helpers.py set_precision_configs,
-- set_perf_optimization_configs).
local function nemotron340(fp8, gpus, pp)
    local nemo2 = pp == 4
    local f = nemotron4(96, 18432, 96, fp8)
    f.micro_batch_size, f.global_batch_size, f.world_size = 1, gpus // 4, gpus
    f.tensor_model_parallel_size, f.pipeline_model_parallel_size = 8, pp
    f.num_virtual_stages_per_pipeline_rank = 12
    f.recompute_granularity = "selective"
    f.grad_reduce_in_bf16 = true
    if nemo2 then
        f.cross_entropy_fusion_impl = "te"
    else
        f.use_precision_aware_optimizer = true
        f.main_grads_dtype, f.exp_avg_dtype, f.exp_avg_sq_dtype = "bf16", "bf16", "bf16"
    end
    return f
end

-- Llama 3 8B (Megatron-Bridge's recipe): 32 x 4096, 32 heads, 8 query
-- groups, SwiGLU of 14336, RMSNorm, RoPE, no biases, no dropout, untied,
-- vocabulary 128,256, sequence 8192; TP 1, MBS 2, GBS 128 on 8 GPUs, the
-- distributed optimizer overlapped; FP8 per-tensor current scaling
-- ("FP8-CS": Megatron's tensorwise) or MXFP8; the benchmark defaults of
-- Megatron-Bridge's perf recipes (src/megatron/bridge/perf_recipes/
-- _common.py _benchmark_common: TE's cross-entropy, gradients reduced in
-- bf16; CUDA graphs, which pipesim does not model: it charges no CPU
-- launch time anyway).
local function llama8(recipe)
    return V.llama3(32, 4096, 14336, 32, { micro_batch_size = 2, global_batch_size = 128,
        world_size = 8, cross_entropy_fusion_impl = "te", fp8_format = "hybrid",
        fp8_recipe = recipe })
end

-- name, source, device, nodes, flags, published seconds per step
local ROWS = {
    { "GPT-3 175B BF16", "D", "H100", 16, gpt175(false), 8.309 },
    { "GPT-3 175B FP8", "D", "H100", 16, gpt175(true), 5.626 },
    { "Nemotron-4 15B BF16", "D", "H100", 2, nemotron15(false), 2.812 },
    { "Nemotron-4 15B FP8", "D", "H100", 2, nemotron15(true), 2.039 },
    { "Nemotron-4 340B FP8", "D", "H100", 16, nemotron340(true, 128, 8), 3.16 },
    { "Llama 3 8B FP8-CS", "B", "B200", 1, llama8("tensorwise"), 128 * 8192 / (8 * 30624) },
    { "Llama 3 8B MXFP8", "B", "B200", 1, llama8("mxfp8"), 128 * 8192 / (8 * 29521) },
    { "Llama 3 8B FP8-CS", "B", "GB200", 1, llama8("tensorwise"), 128 * 8192 / (8 * 31508) },
    { "Nemotron-4 340B BF16", "G", "GB200", 2, nemotron340(false, 128, 4), 2.189 },
    { "Nemotron-4 340B FP8", "G", "GB200", 2, nemotron340(true, 128, 4), 1.483 },
}
local QUICK = { [3] = true, [4] = true, [6] = true }

local tally = V.tally { "H100", "B200", "GB200" } -- results returned, for tests/lua/test_validation.lua
print(string.format("%-22s %-3s %-6s %9s %9s %8s %6s", "model", "src", "device", "published",
    "pipesim", "error", "fits"))
for i, row in ipairs(ROWS) do
    if not quick or QUICK[i] then
        local name, src, device, nodes, f, secs = table.unpack(row)
        -- GB200: nodes are NVL72 racks, 72 GPUs each; the job's GPUs
        local spec = ps.clusters.dgx(device, nodes)
        f.cluster = ps.cluster(spec)
        f.record = "summary"
        f.name = name .. " " .. device
        local run = ps.models.megatron(f)
        local r = ps.run(run)
        local err = V.add(tally, name, device, secs, r)
        print(string.format("%-22s %-3s %-6s %8.3fs %8.3fs %+7.1f%% %6s", name, src, device, secs,
            r.makespan, 100 * err, tostring(r.fits)))
    end
end
V.summary(tally)
return tally.results
