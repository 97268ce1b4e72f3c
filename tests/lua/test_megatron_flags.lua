-- ps.models.megatron takes a pasted launch script: every flag it reads
-- changes the simulated step (each one walked here, with the flags it
-- needs), every flag listed as ignored changes nothing and is listed,
-- every other Megatron flag is accepted at Megatron's default and an error
-- naming it elsewhere; Megatron's pipeline split (uneven first/last
-- stages, the embedding and loss accounted as layers), and the messages.
-- Runs under `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local megatron = require "pipesim.models.megatron"
local known = megatron.known

local clusters = { H100 = ps.cluster(ps.clusters.dgx("H100", 1)),
                   B200 = ps.cluster(ps.clusters.dgx("B200", 1)) }

-- a small model on 8 GPUs: tp 2, pp 2, dp 2, 8 microbatches
local BASE = { num_layers = 8, hidden_size = 256, num_attention_heads = 8, seq_length = 256,
    vocab_size = 1000, bf16 = true, micro_batch_size = 1, global_batch_size = 16,
    tensor_model_parallel_size = 2, pipeline_model_parallel_size = 2, world_size = 8,
    record = "none" }

local function flags(extra, device)
    local f = {}
    for k, v in pairs(BASE) do f[k] = v end
    for k, v in pairs(extra or {}) do f[k] = v end
    f.cluster = clusters[device or "H100"]
    return f
end

-- what a step is: its time and each rank's peak and static memory
local function figures(f)
    local r = ps.run(ps.models.megatron(f))
    local t = { r.makespan }
    for i, v in ipairs(r.peak_memory) do t[#t + 1] = v; t[#t + 1] = r.static_memory[i] end
    return t
end

local function same(a, b)
    if #a ~= #b then return false end
    for i = 1, #a do if a[i] ~= b[i] then return false end end
    return true
end

-- Each flag ps.models.megatron reads: a value (and the flags it needs,
-- given on both sides; a device; what differs on the side without it)
-- that changes the step.
local FP8 = { fp8_format = "hybrid", fp8_recipe = "tensorwise" }
local function plus(t, u)
    local x = {}
    for k, v in pairs(t or {}) do x[k] = v end
    for k, v in pairs(u or {}) do x[k] = v end
    return x
end
local DP = { use_distributed_optimizer = true, overlap_grad_reduce = true }
local VARY = {
    num_layers = { 12 }, hidden_size = { 512 }, ffn_hidden_size = { 512 },
    num_attention_heads = { 4 },
    num_query_groups = { 2, { group_query_attention = true }, nil, { num_query_groups = 4 } },
    group_query_attention = { true, { tensor_model_parallel_size = 1, world_size = 4 } },
    kv_channels = { 64 },
    swiglu = { true }, squared_relu = { true, { disable_bias_linear = false } },
    seq_length = { 512 },
    max_position_embeddings = { 4096 }, vocab_size = { 50000 },
    make_vocab_size_divisible_by = { 1000 }, fp16 = { true, { bf16 = false } },
    bf16 = { false }, untie_embeddings_and_output_weights = { true },
    position_embedding_type = { "rope" }, use_rotary_position_embeddings = { true },
    normalization = { "RMSNorm" }, disable_bias_linear = { true },
    attention_dropout = { 0, { hidden_dropout = 0 }, nil, { hidden_dropout = 0.1 } },
    hidden_dropout = { 0, { attention_dropout = 0 }, nil, { attention_dropout = 0.1 } },
    transformer_impl = { "local" }, attention_backend = { "unfused" },
    micro_batch_size = { 2 }, global_batch_size = { 32 }, tensor_model_parallel_size = { 4 },
    pipeline_model_parallel_size = { 4 },
    num_layers_per_virtual_pipeline_stage = { 2 }, num_virtual_stages_per_pipeline_rank = { 2 },
    decoder_first_pipeline_num_layers = { 3 }, decoder_last_pipeline_num_layers = { 3 },
    -- (with the flag 7 layers split as 8; without it 7 cannot split on 2
    -- stages: the step without it is the 8-layer model's)
    account_for_embedding_in_pipeline_split = { true, { num_layers = 7 }, nil, { num_layers = 8 } },
    account_for_loss_in_pipeline_split = { true, { num_layers = 7 }, nil, { num_layers = 8 } },
    context_parallel_size = { 2 },
    cp_comm_type = { "all_gather", { context_parallel_size = 2 } },
    hierarchical_context_parallel_sizes = { { 2, 2 }, { context_parallel_size = 4,
        tensor_model_parallel_size = 1, cp_comm_type = "a2a+p2p",
        hierarchical_context_parallel_sizes = { 4, 1 } } },
    sequence_parallel = { true }, tp_comm_overlap = { true, { sequence_parallel = true } },
    recompute_granularity = { "selective" },
    recompute_modules = { { "layernorm" }, { recompute_granularity = "selective" } },
    recompute_method = { "block", { recompute_granularity = "full", recompute_method = "uniform",
                                    recompute_num_layers = 2 } },
    recompute_num_layers = { 2, { recompute_granularity = "full", recompute_method = "block" } },
    recompute_activations = { true }, use_distributed_optimizer = { true },
    -- (several buckets: a model of 100M parameters a rank)
    overlap_grad_reduce = { true, { hidden_size = 2048, num_attention_heads = 16 } },
    overlap_param_gather = { true, DP },
    ddp_bucket_size = { 1000, { overlap_grad_reduce = true } },
    accumulate_allreduce_grads_in_fp32 = { true, { fp16 = true, bf16 = false } },
    grad_reduce_in_bf16 = { true }, use_precision_aware_optimizer = { true },
    main_grads_dtype = { "bf16", { use_precision_aware_optimizer = true } },
    main_params_dtype = { "fp16", plus(FP8, { use_precision_aware_optimizer = true }) },
    exp_avg_dtype = { "bf16", { use_precision_aware_optimizer = true } },
    exp_avg_sq_dtype = { "bf16", { use_precision_aware_optimizer = true } },
    cross_entropy_loss_fusion = { true },
    cross_entropy_fusion_impl = { "te", { cross_entropy_loss_fusion = true } },
    fp8_format = { "hybrid" }, fp8_recipe = { "tensorwise", { fp8_format = "hybrid" } },
    fp8_param_gather = { true, { fp8_format = "hybrid", use_distributed_optimizer = true } },
    no_fp8_wgrad = { true, { fp8_format = "hybrid" } },
    disable_fp8_wgrad = { true, { fp8_format = "hybrid" } },
    fp8_output_proj = { true, { fp8_format = "e4m3", fp8_recipe = "mxfp8" }, "B200" },
    first_last_layers_bf16 = { true, FP8 },
    num_layers_at_start_in_bf16 = { 2, plus(FP8, { first_last_layers_bf16 = true }) },
    num_layers_at_end_in_bf16 = { 2, plus(FP8, { first_last_layers_bf16 = true }) },
    -- sharded data parallelism (docs/sharding.md)
    use_megatron_fsdp = { true, { overlap_grad_reduce = true } },
    data_parallel_sharding_strategy = { "optim_grads",
        { use_megatron_fsdp = true, overlap_grad_reduce = true } },
    -- (Megatron asserts pp 1 and untied embeddings for --use-torch-fsdp2)
    use_torch_fsdp2 = { true, { pipeline_model_parallel_size = 1,
        untie_embeddings_and_output_weights = true } },
    torch_fsdp2_no_reshard_after_forward = { true, { use_torch_fsdp2 = true,
        pipeline_model_parallel_size = 1, untie_embeddings_and_output_weights = true } },
    num_distributed_optimizer_instances = { 2, { use_distributed_optimizer = true } },
}
-- untie_embeddings_and_output_weights changes the step since the tied
-- embedding's gradient all-reduce between the first and last stage is
-- modelled (core/par/tied.h); none is read and changes nothing now
VARY.untie_embeddings_and_output_weights = { true }
local NO_CHANGE = {}
local walked = 0
-- the MoE, MLA and MTP flags are walked by tests/lua/test_moe.lua against
-- the model and run table they build (ps.run times MoE blocks through
-- the expert-parallel lowering)
local MOE_FLAGS = require("pipesim.models.megatron_moe").FLAGS
for name in pairs(megatron.MODELLED) do
    if MOE_FLAGS[name] then goto next end
    local v = VARY[name]
    if NO_CHANGE[name] then
        H.eq(figures(flags { [name] = true }), figures(flags()), name .. ": not modelled (known)")
        goto next
    end
    if not H.check(v ~= nil, "a variation for modelled flag " .. name) then goto next end
    do
        local value, needs, device = v[1], v[2], v[3]
        local base = figures(flags(plus(needs, v[4]), device))
        local changed = figures(flags(plus(needs, { [name] = value }), device))
        H.check(not same(base, changed), name .. " changes the step")
        walked = walked + 1
    end
    ::next::
end
H.check(walked >= 60, string.format("walked %d modelled flags", walked))

-- pipesim's fp8 is Megatron's dest of --fp8-format: the same step
H.eq(figures(flags { fp8 = "hybrid" }), figures(flags { fp8_format = "hybrid" }),
    "fp8 = fp8_format")

-- every ignored flag: the same step, and listed (once, sorted)
local base = figures(flags())
local n = 0
local IGNORED = {}
for name in pairs(known.IGNORED) do IGNORED[name] = true end
for name in pairs(megatron.MOE_IGNORED) do IGNORED[name] = true end
for name in pairs(IGNORED) do
    local d = known.DEFAULTS[name]
    local value = d == known.NONE and "x" or d == false and true or d
    local f = flags { [name] = value }
    local _, _, report = ps.models.megatron(f)
    H.check(#report.ignored == 1 and report.ignored[1] == name, name .. " is listed as ignored")
    if n < 40 then -- the step itself for a sample (each run costs a few ms)
        H.eq(figures(f), base, name .. " changes nothing")
    end
    n = n + 1
end
H.check(n > 300, string.format("%d ignored flags", n))
local _, _, rep = ps.models.megatron(flags { seed = 7, lr = 1e-4, train_iters = 10 })
H.eq(rep.ignored, { "lr", "seed", "train_iters" }, "the ignored flags, sorted")

-- every other flag: accepted at Megatron's default, an error naming it
-- anywhere else
local checked = 0
for name, d in pairs(known.DEFAULTS) do
    if not (megatron.MODELLED[name] or IGNORED[name]) then
        if d ~= known.NONE then
            local ok, err = pcall(ps.models.megatron, flags { [name] = d })
            H.check(ok, name .. " at its default: " .. tostring(err))
        end
        local other = d == known.NONE and 3 or d == false and true or type(d) == "number" and d + 1
            or "something-else"
        local ok, err = pcall(ps.models.megatron, flags { [name] = other })
        H.check(not ok and tostring(err):find("'" .. name .. "'", 1, true) ~= nil,
            name .. " away from its default is an error naming it: " .. tostring(err))
        checked = checked + 1
    end
end
H.check(checked > 300, string.format("%d unmodelled flags", checked))

-- the messages
H.raises(function() ps.models.megatron(flags { moe_shared_expert_overlap = true }) end,
    "megatron: flag 'moe_shared_expert_overlap' = true changes the step's time or memory and " ..
    "is not modelled by pipesim (Megatron's default: false)")
H.raises(function() ps.models.megatron(flags { hybrid_context_parallel = true }) end,
    "megatron: flag 'hybrid_context_parallel' (context parallelism) is not modelled yet")
H.raises(function() ps.models.megatron(flags { use_megatron_fsdp = true }) end,
    "megatron: use_megatron_fsdp with data_parallel_sharding_strategy optim_grads_params needs " ..
    "overlap_grad_reduce (pipesim reduces during each backward)")
H.raises(function() ps.models.megatron(flags { fsdp_double_buffer = true }) end,
    "megatron: flag 'fsdp_double_buffer' (Megatron-FSDP tuning) is not modelled yet")
-- no misleading suggestion: fp8 is Megatron's own (--fp8-format's dest)
H.raises(function() ps.models.megatron(flags { fp8 = true }) end,
    "megatron: flag 'fp8' is --fp8-format's dest: give 'e4m3' or 'hybrid', got true")
H.raises(function() ps.models.megatron(flags { fp8_formt = "hybrid" }) end,
    "megatron: unknown flag 'fp8_formt' (not a flag of Megatron-LM d98e8a64dd " ..
    "(Megatron-Core 0.20.0, 2026-08-22)) (did you mean 'fp8_format'?)")
H.raises(function() ps.models.megatron(flags { fp8_format = "e5m2" }) end,
    "megatron: flag 'fp8_format' must be one of e4m3, hybrid, got 'e5m2'")
H.raises(function() ps.models.megatron(flags { fp8_recipe = "tensorwise" }) end,
    "megatron: flag 'fp8_recipe' needs fp8_format ('e4m3' or 'hybrid')")
H.raises(function() ps.models.megatron(flags { fp8_format = "hybrid", fp8_param_gather = true }) end,
    "megatron: fp8_param_gather needs use_distributed_optimizer")
H.raises(function() ps.models.megatron(flags { fp8_format = "hybrid", fp8_output_proj = true }) end,
    "megatron: fp8_output_proj changes nothing with fp8_recipe 'delayed'")
H.raises(function() ps.models.megatron(flags { fp8_format = "hybrid",
    first_last_layers_bf16 = true }) end,
    "fp8_bf16_first/fp8_bf16_last need a recipe other than 'delayed'")
H.raises(function() ps.models.megatron(flags { fp8_format = "hybrid", fp8_recipe = "tensorwise",
    num_layers_at_start_in_bf16 = 2 }) end,
    "megatron: num_layers_at_start_in_bf16 changes nothing without first_last_layers_bf16")
H.raises(function() ps.models.megatron(flags { tp_comm_overlap = true }) end,
    "megatron: tp_comm_overlap needs sequence_parallel")
H.raises(function() ps.models.megatron(flags { num_query_groups = 2 }) end,
    "megatron: num_query_groups (2) changes nothing without group_query_attention")
H.raises(function() ps.models.megatron(flags { attention_dropout = 0 }) end,
    "megatron: attention_dropout (0) and hidden_dropout (0.1): pipesim models dropout as one switch")
H.raises(function() ps.models.megatron(flags { exp_avg_dtype = "bf16" }) end,
    "megatron: exp_avg_dtype 'bf16' needs use_precision_aware_optimizer")
H.raises(function() ps.models.megatron(flags { attention_backend = "flash",
    transformer_impl = "local" }) end,
    "megatron: attention_backend 'flash' needs transformer_impl 'transformer_engine'")

-- Megatron's pipeline split (megatron/core/transformer/transformer_block.py
-- get_num_layers_to_build). Llama 3 405B's 126 layers on PP 16: the
-- embedding and the loss each take a layer's place (128 / 16 = 8 a stage),
-- so the first stage holds the embedding and 7 blocks, the last 7 blocks
-- and the head; with VP 4, two per chunk, the first chunk one block
local function split(extra)
    local f = { num_layers = 126, hidden_size = 256, num_attention_heads = 8, seq_length = 128,
        vocab_size = 1000, pipeline_model_parallel_size = 16, world_size = 16 }
    for k, v in pairs(extra) do f[k] = v end
    return ps.models.megatron(f).partition
end
local acc = split { account_for_embedding_in_pipeline_split = true,
    account_for_loss_in_pipeline_split = true }
H.eq(#acc, 16)
H.eq({ acc[1], acc[2], acc[15], acc[16] }, { 8, 8, 8, 8 },
    "embedding + 7 blocks, 8 blocks, ..., 7 blocks + head")
local vp = split { account_for_embedding_in_pipeline_split = true,
    account_for_loss_in_pipeline_split = true, num_layers_per_virtual_pipeline_stage = 2 }
H.eq(#vp, 64, "16 stages x 4 chunks")
H.eq({ vp[1], vp[2], vp[64] }, { 2, 2, 2 }, "first chunk: embedding + 1 block; last: 1 + head")
local total = 0
for _, c in ipairs(vp) do total = total + c end
H.eq(total, 128, "126 blocks, the embedding and the head")
local uneven = split { decoder_first_pipeline_num_layers = 6, decoder_last_pipeline_num_layers = 8 }
H.eq({ uneven[1], uneven[2], uneven[16] }, { 7, 8, 9 },
    "first 6 blocks + embedding, middle 112 / 14 = 8, last 8 + head")
H.raises(function() split { decoder_first_pipeline_num_layers = 7 } end,
    "decoder_first/last_pipeline_num_layers (7, nil) leave 119 layers for 15 middle stages")
H.raises(function() split {} end,
    "megatron: num_layers (126) is not divisible by pipeline_model_parallel_size (16)")
H.raises(function() split { decoder_first_pipeline_num_layers = 6,
    account_for_loss_in_pipeline_split = true } end,
    "decoder_first/last_pipeline_num_layers cannot be set with account_for_embedding/loss")
H.done()
