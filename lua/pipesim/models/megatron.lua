-- ps.models.megatron{...}: a Megatron-LM launch script's flags (flag names
-- as megatron/training/arguments.py defines them, dashes as underscores:
-- --fp8-format hybrid is fp8_format = "hybrid", a switch is `= true`) ->
-- the ps.run table of one training step. Megatron's defaults apply where a
-- flag is absent, as Megatron-Core 0.20.0 sets them (NVIDIA/Megatron-LM
-- d98e8a64dd; models/megatron_flags.lua lists every flag and default of
-- that parser): fp32 unless --fp16/--bf16, a 4h MLP, the vocabulary padded
-- to a multiple of 128 x tp, no recompute, and Transformer Engine's fused
-- attention (--transformer-impl transformer_engine, --attention-backend
-- auto: the flash/cuDNN kernel; --use-flash-attn is parsed and unused in
-- Megatron-Core 0.20). Derived sizes follow Megatron's rules (data-parallel
-- size = world / (tp x pp), microbatches = global batch / (micro batch x
-- dp), the layer split below).
--
-- A whole launch script can be pasted: a flag that changes no step's time
-- or memory (learning rate, iterations, seeds, paths, logging, ...) is
-- accepted and listed as ignored (a warning line, and the third result);
-- a flag that would change performance and is not modelled is an error
-- naming it, unless it is given at Megatron's default.
local check = require "pipesim.argcheck"
local transformer = require "pipesim.models.transformer"
local known = require "pipesim.models.megatron_flags"
local split = require "pipesim.models.megatron_split"
local sharding = require "pipesim.sharding"
local moe_flags = require "pipesim.models.megatron_moe"
local recompute_modules = require "pipesim.recompute"

local M = {}

-- The flags ps.models.megatron reads (each changes the step it builds).
local MODELLED = {}
for name in ([[
num_layers hidden_size ffn_hidden_size num_attention_heads num_query_groups group_query_attention
kv_channels swiglu squared_relu seq_length max_position_embeddings vocab_size
make_vocab_size_divisible_by fp16 bf16 untie_embeddings_and_output_weights
position_embedding_type use_rotary_position_embeddings normalization disable_bias_linear
attention_dropout hidden_dropout transformer_impl attention_backend
micro_batch_size global_batch_size tensor_model_parallel_size pipeline_model_parallel_size
num_layers_per_virtual_pipeline_stage num_virtual_stages_per_pipeline_rank
decoder_first_pipeline_num_layers decoder_last_pipeline_num_layers
account_for_embedding_in_pipeline_split account_for_loss_in_pipeline_split
context_parallel_size cp_comm_type hierarchical_context_parallel_sizes
sequence_parallel tp_comm_overlap recompute_granularity recompute_method recompute_num_layers
recompute_activations use_distributed_optimizer overlap_grad_reduce overlap_param_gather
recompute_modules ddp_bucket_size accumulate_allreduce_grads_in_fp32 grad_reduce_in_bf16
use_precision_aware_optimizer main_grads_dtype main_params_dtype exp_avg_dtype exp_avg_sq_dtype
cross_entropy_loss_fusion cross_entropy_fusion_impl
fp8_format fp8_recipe fp8_param_gather no_fp8_wgrad disable_fp8_wgrad fp8_output_proj
use_megatron_fsdp data_parallel_sharding_strategy use_torch_fsdp2
torch_fsdp2_no_reshard_after_forward num_distributed_optimizer_instances
first_last_layers_bf16 num_layers_at_start_in_bf16 num_layers_at_end_in_bf16
num_experts moe_router_topk moe_ffn_hidden_size moe_shared_expert_intermediate_size moe_layer_freq
moe_expert_capacity_factor moe_pad_expert_input_to_capacity moe_grouped_gemm moe_permute_fusion
moe_router_num_groups
moe_router_group_topk moe_dispatch_fwd_dtype moe_combine_bwd_dtype moe_token_dispatcher_type
expert_model_parallel_size expert_tensor_parallel_size moe_flex_dispatcher_backend
overlap_moe_expert_parallel_comm delay_wgrad_compute
multi_latent_attention q_lora_rank kv_lora_rank qk_head_dim qk_pos_emb_head_dim v_head_dim
mtp_num_layers
]]):gmatch("%S+") do MODELLED[name] = true end
M.MODELLED = MODELLED

-- MoE and MTP flags that change no step time or memory, beside the
-- generated list (models/megatron_flags.lua IGNORED, which leaves them to
-- be decided here): loss coefficients and scalings, the router's
-- bias-update rule (the bias is E numbers), balancing-loss variants,
-- jitter, logging, and --moe-router-force-load-balancing (pipesim routes
-- evenly unless told otherwise, ps.run's moe_imbalance). The router's
-- fp32 dtype and fused kernels (--moe-router-dtype, --moe-router-fusion)
-- and its score function (softmax or sigmoid, --moe-router-score-function)
-- move the same Tr x E scores through HBM (models/moe.lua block_cost);
-- --moe-token-drop-policy picks which tokens a full expert drops, not how
-- many.
local MOE_IGNORED = {}
for name in ([[
moe_aux_loss_coeff moe_z_loss_coeff moe_router_topk_scaling_factor moe_router_pre_softmax
moe_router_enable_expert_bias moe_router_bias_update_rate moe_router_load_balancing_type
moe_input_jitter_eps moe_per_layer_logging moe_router_force_load_balancing moe_router_dtype
moe_router_fusion mtp_loss_scaling_factor moe_router_score_function moe_token_drop_policy
]]):gmatch("%S+") do MOE_IGNORED[name] = true end
M.MOE_IGNORED = MOE_IGNORED

-- pipesim's own additions: world_size (the launcher's, torchrun
-- --nnodes x --nproc-per-node), fp8 (Megatron's dest of --fp8-format),
-- param_gather_start ("forward", Megatron-Core >= 0.9, or "step", 0.5 to
-- 0.8: when --overlap-param-gather's all-gathers go out, ps.run's
-- grad_sync.param_gather_start), and the ps.run fields passed through
-- (tp_overlap: --tp-comm-overlap).
local PIPESIM = { world_size = true, fp8 = true, cluster = true, name = true, record = true,
                  db = true, schedule = true, grad_sync = true, tp_overlap = true,
                  optimizer_time = true, param_gather_start = true }
M.PIPESIM = PIPESIM

-- Every name ps.models.megatron accepts, for suggestions.
local ACCEPTED = {}
for k in pairs(known.DEFAULTS) do ACCEPTED[k] = true end
for k in pairs(PIPESIM) do ACCEPTED[k] = true end

local DEFERRED = {}
for topic, names in pairs(known.DEFERRED) do
    for n in names:gmatch("%S+") do DEFERRED[n] = topic end
end

-- Is v Megatron's default d (NONE: None)? A one-element list default
-- (cp_comm_type's ['p2p']) matches its element or the list.
local function at_default(v, d)
    if d == known.NONE then return false end
    if type(d) == "table" then
        if type(v) ~= "table" then return #d == 1 and v == d[1] end
        if #v ~= #d then return false end
        for i = 1, #d do if v[i] ~= d[i] then return false end end
        return true
    end
    return v == d
end

-- A flag M.build does not read: listed in ignored when it changes no step
-- time or memory; else an error when unknown, or when it is given away
-- from Megatron's default (deferred or not modelled).
local function check_unread(k, v, ignored)
    local d = known.DEFAULTS[k]
    if known.IGNORED[k] or MOE_IGNORED[k] then
        ignored[#ignored + 1] = k
    elseif d == nil then
        check.fail("megatron: unknown flag '%s' (not a flag of %s)%s", k, known.SOURCE,
            check.hint(k, ACCEPTED))
    elseif DEFERRED[k] and not at_default(v, d) then
        check.fail("megatron: flag '%s' (%s) is not modelled yet; pipesim cannot run this " ..
            "launch script", k, DEFERRED[k])
    elseif not at_default(v, d) then
        check.fail("megatron: flag '%s' = %s changes the step's time or memory and is not " ..
            "modelled by pipesim (Megatron's default: %s)", k, check.show(v), tostring(d))
    end
end

-- The flags given that change nothing (sorted); raises on the first bad
-- one in name order (the same every run).
local function classify(a)
    local names = {}
    for k in pairs(a) do
        if type(k) ~= "string" then
            check.fail("megatron: flags are named by strings, got key %s", check.show(k))
        end
        names[#names + 1] = k
    end
    table.sort(names)
    local ignored = {}
    for _, k in ipairs(names) do
        if not (MODELLED[k] or PIPESIM[k]) then check_unread(k, a[k], ignored) end
    end
    return ignored
end

-- Warnings already written this process (one line per distinct list).
local WARNED = {}

local function warn_ignored(ignored)
    if #ignored == 0 then return end
    local line = string.format("pipesim: warning: megatron: %d flag%s change%s no step time or " ..
        "memory and %s ignored: %s\n", #ignored, #ignored == 1 and "" or "s",
        #ignored == 1 and "s" or "", #ignored == 1 and "is" or "are", table.concat(ignored, ", "))
    if WARNED[line] then return end
    WARNED[line] = true
    io.stderr:write(line)
end

local function int(a, k, d)
    local v = a[k]
    if v == nil then
        if d == nil then check.fail("megatron: missing flag '%s'", k) end
        return d
    end
    return check.posint(v, "megatron: " .. k)
end

local function bool(a, k, d)
    local v = a[k]
    if v == nil then return d end
    return check.bool(v, string.format("megatron: flag '%s'", k))
end

-- a string flag among Megatron's choices (a list), default d
local function choice(a, k, choices, d)
    local v = a[k]
    if v == nil then return d end
    for _, c in ipairs(choices) do if v == c then return v end end
    check.fail("megatron: flag '%s' must be one of %s, got %s", k, table.concat(choices, ", "),
        check.show(v))
end

-- Megatron's _vocab_size_with_padding (megatron/training/tokenizer/
-- tokenizer.py): pad to a multiple of make_vocab_size_divisible_by x tp.
function M.padded_vocab(v, divisible_by, tp)
    local m = divisible_by * tp
    return ((v + m - 1) // m) * m
end

-- Attention as Megatron-Core 0.20 picks it: --transformer-impl
-- transformer_engine (the default) runs TEDotProductAttention, which with
-- --attention-backend auto (the default), flash or fused is a fused kernel
-- (FlashAttention or cuDNN's) and with unfused the scores through HBM;
-- --transformer-impl local runs Megatron's own DotProductAttention
-- (unfused, fused softmax). Returns flash_attention.
local function attention(a)
    local impl = choice(a, "transformer_impl", { "transformer_engine", "local" },
        "transformer_engine")
    local backend = choice(a, "attention_backend", { "auto", "flash", "fused", "unfused" },
        impl == "local" and "unfused" or "auto")
    if impl == "local" and backend ~= "unfused" then
        check.fail("megatron: attention_backend %s needs transformer_impl 'transformer_engine' " ..
            "(Megatron's local attention is unfused)", check.show(backend))
    end
    return backend ~= "unfused"
end

-- FP8 flags -> the shape's fp8 fields (models/transformer.lua), or {}.
-- Megatron's fp8_param_gather needs the distributed optimizer (or FSDP;
-- arguments.py validate_args).
local function fp8_fields(a, L)
    local fmt = a.fp8_format
    if a.fp8 ~= nil then
        if type(a.fp8) ~= "string" then
            check.fail("megatron: flag 'fp8' is --fp8-format's dest: give 'e4m3' or 'hybrid', " ..
                "got %s", check.show(a.fp8))
        end
        if fmt ~= nil and fmt ~= a.fp8 then
            check.fail("megatron: fp8 (%s) and fp8_format (%s) disagree", check.show(a.fp8),
                check.show(fmt))
        end
        fmt = a.fp8
    end
    if fmt == nil then
        for _, k in ipairs { "fp8_recipe", "fp8_param_gather", "fp8_output_proj",
                             "first_last_layers_bf16" } do
            if a[k] ~= nil and a[k] ~= false and not (k == "fp8_recipe" and a[k] == "delayed") then
                check.fail("megatron: flag '%s' needs fp8_format ('e4m3' or 'hybrid')", k)
            end
        end
        return {}
    end
    fmt = choice({ fp8_format = fmt }, "fp8_format", { "e4m3", "hybrid" })
    local f = { fp8 = fmt, fp8_recipe = choice(a, "fp8_recipe",
                    { "delayed", "tensorwise", "blockwise", "mxfp8" }, "delayed"),
                fp8_params = bool(a, "fp8_param_gather", false),
                fp8_wgrad = not (bool(a, "no_fp8_wgrad", false) or bool(a, "disable_fp8_wgrad", false)) }
    if f.fp8_params and not bool(a, "use_distributed_optimizer", false) then
        check.fail("megatron: fp8_param_gather needs use_distributed_optimizer (Megatron: " ..
            "\"--fp8-param-gather only supported with distributed optimizer\")")
    end
    if bool(a, "fp8_output_proj", false) then
        -- only under mxfp8 does Megatron run the output layer in FP8
        -- (fp8_utils.py is_mxfp8_output_proj_active): elsewhere the flag
        -- changes nothing
        if f.fp8_recipe ~= "mxfp8" then
            check.fail("megatron: fp8_output_proj changes nothing with fp8_recipe %s (Megatron " ..
                "runs the output layer in FP8 under 'mxfp8' only)", check.show(f.fp8_recipe))
        end
        f.fp8_head = true
    end
    if not bool(a, "first_last_layers_bf16", false) then
        for _, k in ipairs { "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16" } do
            if a[k] ~= nil then
                check.fail("megatron: %s changes nothing without first_last_layers_bf16", k)
            end
        end
    else
        f.fp8_bf16_first = check.int(a.num_layers_at_start_in_bf16 or 1, "megatron",
            "num_layers_at_start_in_bf16", 0, L)
        f.fp8_bf16_last = check.int(a.num_layers_at_end_in_bf16 or 1, "megatron",
            "num_layers_at_end_in_bf16", 0, L)
    end
    return f
end

-- Dropout: pipesim's shape has one switch for the attention and hidden
-- dropouts (models/transformer.lua), so they must agree.
local function dropout_of(a)
    local ad, hd = a.attention_dropout or 0.1, a.hidden_dropout or 0.1
    for k, v in pairs { attention_dropout = ad, hidden_dropout = hd } do
        if type(v) ~= "number" or v < 0 or v >= 1 then
            check.fail("megatron: flag '%s' must be a probability in [0, 1), got %s", k, check.show(v))
        end
    end
    if (ad > 0) ~= (hd > 0) then
        check.fail("megatron: attention_dropout (%s) and hidden_dropout (%s): pipesim models " ..
            "dropout as one switch; give both 0 or both > 0", check.show(ad), check.show(hd))
    end
    return ad > 0
end

-- The model's shape (models/transformer.lua) from the flags.
local function shape_of(a, tp, dtype)
    local L, h = int(a, "num_layers"), int(a, "hidden_size")
    local heads = int(a, "num_attention_heads")
    local kv = heads
    if bool(a, "group_query_attention", false) then
        kv = int(a, "num_query_groups", 1)
    elseif a.num_query_groups ~= nil and a.num_query_groups ~= heads then
        -- megatron/training/argument_utils.py: num_query_groups is read
        -- only with --group-query-attention
        check.fail("megatron: num_query_groups (%s) changes nothing without " ..
            "group_query_attention (Megatron then uses num_attention_heads)",
            check.show(a.num_query_groups))
    end
    local pos = choice(a, "position_embedding_type", { "learned_absolute", "rope" },
        "learned_absolute")
    if bool(a, "use_rotary_position_embeddings", false) then pos = "rope" end
    local norm = choice(a, "normalization", { "LayerNorm", "RMSNorm" }, "LayerNorm")
    local shape = {
        layers = L, hidden = h, heads = heads, kv_heads = kv, seq = int(a, "seq_length"),
        microbatch = int(a, "micro_batch_size", 1),
        vocab = M.padded_vocab(int(a, "vocab_size"), int(a, "make_vocab_size_divisible_by", 128), tp),
        dtype = dtype, swiglu = bool(a, "swiglu", false),
        squared_relu = bool(a, "squared_relu", false),
        ffn_hidden = a.ffn_hidden_size ~= nil and int(a, "ffn_hidden_size") or nil,
        head_dim = a.kv_channels ~= nil and int(a, "kv_channels") or nil,
        tied = not bool(a, "untie_embeddings_and_output_weights", false),
        bias = not bool(a, "disable_bias_linear", false),
        norm = norm == "RMSNorm" and "rmsnorm" or "layernorm",
        position = pos == "rope" and "rope" or "learned",
        max_positions = a.max_position_embeddings ~= nil and int(a, "max_position_embeddings") or nil,
        dropout = dropout_of(a),
        flash_attention = attention(a), name = a.name,
    }
    if shape.ffn_hidden == nil and shape.swiglu then
        -- Megatron (arguments.py): --swiglu without --ffn-hidden-size
        -- takes int((4 * h * 2 / 3) / 64) * 64, a multiple of 64 below
        shape.ffn_hidden = math.floor(4 * h * 2 / 3 / 64) * 64
    end
    for k, v in pairs(fp8_fields(a, L)) do shape[k] = v end
    -- experts, multi-latent attention, multi-token prediction
    moe_flags.shape_fields(a, shape, { int = int, bool = bool, choice = choice })
    return shape
end

-- Recompute: --recompute-granularity full needs a method (Megatron-Core's
-- TransformerBlock raises otherwise); selective takes none;
-- --recompute-activations is selective (arguments.py).
-- --recompute-modules (Megatron-Core 0.20, d98e8a64dd, transformer_config.py):
-- the submodules selective recompute covers, ["core_attn"] by default;
-- checked here for the flag's own messages (lua/pipesim/recompute.lua)
-- and handed to ps.run as recompute_modules.
local function recompute_of(a)
    local gran = a.recompute_granularity
    if bool(a, "recompute_activations", false) then
        if gran ~= nil and gran ~= "selective" then
            check.fail("megatron: recompute_activations means recompute_granularity " ..
                "'selective', got %s", check.show(gran))
        end
        gran = "selective"
    end
    recompute_modules.modules(a.recompute_modules, gran, "megatron: recompute_modules",
        "recompute_granularity 'selective'")
    -- a method or a layer count changes nothing without full recompute:
    -- Megatron asserts it away for selective (arguments.py, "recompute
    -- method is not yet supported for selective recomputing granularity")
    -- and ignores it without a granularity (TransformerBlock reads it only
    -- under 'full'; core_v0.19.0), so it is refused rather than accepted
    -- and dropped (issue 27)
    if gran ~= "full" then
        for _, f in ipairs { "recompute_method", "recompute_num_layers" } do
            if a[f] ~= nil then
                check.fail("megatron: %s needs recompute_granularity 'full' (got %s): " ..
                    "Megatron-LM recomputes %s", f, gran == nil and "none" or check.show(gran),
                    gran == "selective" and "selected parts only, without a method"
                        or "nothing without a granularity")
            end
        end
    end
    if gran == "full" then
        local method = a.recompute_method
        if method ~= "uniform" and method ~= "block" then
            check.fail("megatron: recompute_granularity 'full' needs recompute_method 'uniform' " ..
                "or 'block', got %s", check.show(method))
        end
        return "full", method, int(a, "recompute_num_layers", 1)
    elseif gran == "selective" then
        return "selective"
    elseif gran ~= nil then
        check.fail("megatron: recompute_granularity must be 'full' or 'selective', got %s",
            check.show(gran))
    end
    return "none"
end

local BYTES = { fp32 = 4, bf16 = 2, fp16 = 2, fp8 = 1 }

-- Bytes per parameter (Megatron's theoretical_memory_usage.py: 18 = 16-bit
-- weight 2 + fp32 main gradient 4 + Adam's fp32 master weight and moments
-- 12, the last sharded by the distributed optimizer; fp32 training keeps
-- no separate master copy: 4 + 4 + 8). The gradient buffer, which the
-- data-parallel reduction moves, is fp32 with
-- --accumulate-allreduce-grads-in-fp32, which arguments.py forces on for
-- bf16 ("bfloat16 requires gradient accumulation and all-reduce to be done
-- in fp32") unless --grad-reduce-in-bf16 or a bf16 --main-grads-dtype;
-- with fp16 the DDP buffer takes the parameter's dtype (2 bytes). With
-- --use-precision-aware-optimizer (TE's FusedAdam) the optimizer state is
-- the master weight (--main-params-dtype; for bf16 with fp32 masters TE
-- keeps only the 16 bits a bf16 weight lacks, store_param_remainders, 2
-- bytes, unless non-delayed FP8 weights make Megatron keep the fp32 master:
-- megatron/core/optimizer/__init__.py) and the two moments
-- (--exp-avg-dtype, --exp-avg-sq-dtype); without it those must be fp32
-- (optimizer_config.py).
local function memory_of(a, dtype, fp8)
    if dtype == "fp32" then return { weight_bytes = 4, grad_bytes = 4, optimizer_bytes = 8 } end
    local pa = bool(a, "use_precision_aware_optimizer", false)
    local dt = {}
    for _, k in ipairs { "main_grads_dtype", "main_params_dtype", "exp_avg_dtype",
                         "exp_avg_sq_dtype" } do
        local choices = k == "main_grads_dtype" and { "fp32", "bf16" }
            or k == "main_params_dtype" and { "fp32", "fp16" } or { "fp32", "fp16", "bf16", "fp8" }
        dt[k] = choice(a, k, choices, "fp32")
        if dt[k] ~= "fp32" and not pa then
            check.fail("megatron: %s %s needs use_precision_aware_optimizer (Megatron: \"%s can " ..
                "only be fp32 when not using precision-aware optimizer\")", k, check.show(dt[k]), k)
        end
    end
    local fp32_grads = bool(a, "accumulate_allreduce_grads_in_fp32", false)
    if dtype == "bf16" and not bool(a, "grad_reduce_in_bf16", false) and dt.main_grads_dtype == "fp32" then
        fp32_grads = true
    end
    if fp32_grads and dt.main_grads_dtype ~= "fp32" then
        check.fail("megatron: main_grads_dtype can only be fp32 with " ..
            "accumulate_allreduce_grads_in_fp32")
    end
    local opt = 12
    if pa then
        local master = BYTES[dt.main_params_dtype]
        if dtype == "bf16" and master == 4 and (not fp8 or fp8 == "delayed") then master = 2 end
        opt = master + BYTES[dt.exp_avg_dtype] + BYTES[dt.exp_avg_sq_dtype]
    end
    return { weight_bytes = 2, grad_bytes = fp32_grads and 4 or 2, optimizer_bytes = opt }
end

-- Gradient sync (Megatron-Core's DistributedDataParallel): without
-- --overlap-grad-reduce (the default) all gradients are reduced in one go
-- after the backward; with it, in buckets of --ddp-bucket-size elements
-- (default max(40M, 1M x dp), DistributedDataParallelConfig bucket_size)
-- as the backward produces them. --overlap-param-gather: the distributed
-- optimizer's all-gather of the updated parameters overlaps the next
-- step's forward (core/par/dp.h); Megatron asserts the distributed
-- optimizer and --overlap-grad-reduce for it (arguments.py).
local function grad_sync_of(a, dp, grad_bytes)
    local pg = bool(a, "overlap_param_gather", false)
    if pg and not (bool(a, "use_distributed_optimizer", false) and
                   bool(a, "overlap_grad_reduce", false)) then
        check.fail("megatron: overlap_param_gather needs use_distributed_optimizer and " ..
            "overlap_grad_reduce")
    end
    if a.param_gather_start ~= nil and not pg then
        check.fail("megatron: param_gather_start changes nothing without overlap_param_gather")
    end
    if a.grad_sync ~= nil then return a.grad_sync end
    if not bool(a, "overlap_grad_reduce", false) then
        if a.ddp_bucket_size ~= nil then
            -- megatron/core/distributed/distributed_data_parallel.py: no
            -- buckets without --overlap-grad-reduce (bucket_size = None)
            check.fail("megatron: ddp_bucket_size changes nothing without overlap_grad_reduce")
        end
        return { bucket = 2 ^ 53, first_bucket = 2 ^ 53, overlap = false }
    end
    local b = (a.ddp_bucket_size ~= nil and int(a, "ddp_bucket_size") or math.max(40e6, 1e6 * dp))
        * grad_bytes
    -- bucketed = "first": Megatron-Core's DDP cuts only pipeline rank 0's
    -- first model chunk into buckets (bucket_size = None on pp ranks > 0,
    -- "not on the critical path", and for chunks > 0 via get_model's
    -- disable_bucketing; megatron/core/distributed/
    -- distributed_data_parallel.py, megatron/training/training.py, core
    -- 0.20.0 commit d98e8a6 and core_v0.19.0 5be9626; core/par/dp_lane.c
    -- chunk_bucketed). The all-gathers of --overlap-param-gather follow
    -- the same buckets.
    return { bucket = b, first_bucket = b, bucketed = "first", overlap = true,
             overlap_param_gather = (pg and dp > 1) or nil,
             param_gather_start = (pg and dp > 1) and a.param_gather_start or nil }
end

-- Sharded data parallelism (docs/sharding.md) -> ps.run's zero,
-- shard_group and reshard_after_forward. Megatron-Core 0.20
-- (megatron/training/training.py get_model): --use-torch-fsdp2 wraps the
-- model in PyTorch's FSDP2 (FULL_SHARD; --torch-fsdp2-no-reshard-after-
-- forward keeps each unit gathered from its forward to its backward),
-- --use-megatron-fsdp in Megatron-FSDP with --data-parallel-sharding-
-- strategy (no_shard, optim, optim_grads, optim_grads_params = ZeRO 0..3),
-- else DDP, with --use-distributed-optimizer ZeRO-1;
-- --num-distributed-optimizer-instances k shards within dp / k ranks
-- (hybrid). grad_sync is adjusted: ZeRO-2/3 reduce during every backward
-- and have no --overlap-param-gather of their own (FSDP's unit prefetch
-- is always on).
local function sharding_of(a, dp, pp, grad_sync)
    local fsdp2, mfsdp = bool(a, "use_torch_fsdp2", false), bool(a, "use_megatron_fsdp", false)
    if fsdp2 and mfsdp then
        check.fail("megatron: use_torch_fsdp2 and use_megatron_fsdp are both set")
    end
    -- Megatron-Core 0.20 arguments.py asserts these of --use-torch-fsdp2
    if fsdp2 and pp > 1 then
        check.fail("megatron: --use-torch-fsdp2 is not supported with pipeline parallelism " ..
            "(pipeline_model_parallel_size = %d)", pp)
    end
    if fsdp2 and int(a, "expert_model_parallel_size", 1) > 1 then
        check.fail("megatron: --use-torch-fsdp2 is not supported with expert parallelism " ..
            "(expert_model_parallel_size = %d)", int(a, "expert_model_parallel_size", 1))
    end
    if fsdp2 and bool(a, "use_distributed_optimizer", false) then
        check.fail("megatron: --use-torch-fsdp2 is not supported with MCore's distributed optimizer")
    end
    if fsdp2 and not bool(a, "untie_embeddings_and_output_weights", false) then
        check.fail("megatron: --use-torch-fsdp2 requires --untie-embeddings-and-output-weights")
    end
    if not mfsdp and a.data_parallel_sharding_strategy ~= nil then
        check.fail("megatron: data_parallel_sharding_strategy changes nothing without " ..
            "use_megatron_fsdp")
    end
    local no_reshard = bool(a, "torch_fsdp2_no_reshard_after_forward", false)
    if no_reshard and not fsdp2 then
        check.fail("megatron: torch_fsdp2_no_reshard_after_forward changes nothing without " ..
            "use_torch_fsdp2")
    end
    local zero = fsdp2 and 3
        or mfsdp and sharding.megatron(a.data_parallel_sharding_strategy or "optim_grads_params")
        or bool(a, "use_distributed_optimizer", false) and 1 or 0
    local k = int(a, "num_distributed_optimizer_instances", 1)
    if k > 1 and zero == 0 then
        check.fail("megatron: num_distributed_optimizer_instances = %d needs a sharded optimizer " ..
            "(use_distributed_optimizer or use_megatron_fsdp)", k)
    end
    if dp % k ~= 0 then
        check.fail("megatron: num_distributed_optimizer_instances (%d) does not divide the " ..
            "data-parallel size (%d)", k, dp)
    end
    if dp == 1 or zero == 0 then return nil, nil, nil, grad_sync end
    if zero >= 2 and type(grad_sync) == "table" and a.grad_sync == nil then
        if grad_sync.overlap == false and not fsdp2 then
            check.fail("megatron: use_megatron_fsdp with data_parallel_sharding_strategy %s " ..
                "needs overlap_grad_reduce (pipesim reduces during each backward)",
                a.data_parallel_sharding_strategy or "optim_grads_params")
        end
        local g = {}
        for key, v in pairs(grad_sync) do g[key] = v end
        g.overlap, g.overlap_param_gather, g.bucketed = true, nil, nil
        g.param_gather_start = nil
        if g.bucket == 2 ^ 53 then g.bucket, g.first_bucket = nil, nil end
        grad_sync = g
    end
    local reshard -- nil: FSDP2's default, true
    if no_reshard then reshard = false end
    return zero, k > 1 and dp // k or nil, reshard, grad_sync
end

-- --tp-comm-overlap (pipesim's tp_overlap): Megatron asserts sequence
-- parallelism for it ("Tensor parallel communication/GEMM overlap can
-- happen only when sequence parallelism is enabled").
local function tp_overlap_of(a, sp, tp)
    local ov = bool(a, "tp_comm_overlap", nil)
    if a.tp_overlap ~= nil then
        if ov ~= nil and ov ~= a.tp_overlap then
            check.fail("megatron: tp_overlap and tp_comm_overlap disagree")
        end
        ov = a.tp_overlap
    end
    if ov and tp > 1 and not sp then
        check.fail("megatron: tp_comm_overlap needs sequence_parallel (Megatron: \"Tensor " ..
            "parallel communication/GEMM overlap can happen only when sequence parallelism is " ..
            "enabled\")")
    end
    return ov
end

-- --cross-entropy-loss-fusion: Megatron's fused vocab-parallel
-- cross-entropy (megatron/core/fusions/fused_cross_entropy.py) with the
-- default --cross-entropy-fusion-impl native, or Transformer Engine's
-- Triton kernels with te (models/roofline.lua M.head).
local function ce_fusion_of(a)
    local impl = choice(a, "cross_entropy_fusion_impl", { "native", "te" }, "native")
    if not bool(a, "cross_entropy_loss_fusion", false) then
        if a.cross_entropy_fusion_impl ~= nil then
            check.fail("megatron: cross_entropy_fusion_impl changes nothing without " ..
                "cross_entropy_loss_fusion")
        end
        return nil
    end
    return impl
end

-- --context-parallel-size, --cp-comm-type and
-- --hierarchical-context-parallel-sizes as ps.run's cp, cp_comm_type and
-- cp_hierarchy (lua/pipesim/cp.lua). cp_comm_type is a list (one entry
-- per layer, or one for all; Megatron's default ['p2p']) or a string;
-- layers of different types are not modelled. Megatron: "--hierarchical-
-- context-parallel-sizes must be set when cp_comm_type in layers contains
-- 'a2a+p2p'" (arguments.py).
local function cp_of(a)
    local cp = int(a, "context_parallel_size", 1)
    local ct = a.cp_comm_type
    if type(ct) == "table" then
        for i = 2, #ct do
            if ct[i] ~= ct[1] then
                check.fail("megatron: cp_comm_type differs between layers (%s and %s); one " ..
                    "type for every layer is modelled", check.show(ct[1]), check.show(ct[i]))
            end
        end
        ct = ct[1]
    end
    local h = a.hierarchical_context_parallel_sizes
    if h ~= nil and type(h) ~= "table" then
        check.fail("megatron: hierarchical_context_parallel_sizes must be a list such as " ..
            "{ 2, 4 }, got %s", check.show(h))
    end
    if ct == "a2a+p2p" and h == nil then
        check.fail("megatron: hierarchical_context_parallel_sizes must be set when " ..
            "cp_comm_type is 'a2a+p2p'")
    end
    if cp == 1 then
        -- Megatron's defaults change nothing at cp 1
        if (ct ~= nil and ct ~= "p2p") or h ~= nil then
            check.fail("megatron: cp_comm_type and hierarchical_context_parallel_sizes need " ..
                "context_parallel_size > 1")
        end
        return 1
    end
    return cp, ct, h
end

-- megatron(flags) -> ps.run table, the model's shape, and { ignored =
-- the flags listed as changing nothing }. Raises naming the flag.
function M.build(a)
    if type(a) ~= "table" then
        check.fail("megatron: expected a table of Megatron-LM flags, got %s", type(a))
    end
    local ignored = classify(a)
    local tp = int(a, "tensor_model_parallel_size", 1)
    local pp = int(a, "pipeline_model_parallel_size", 1)
    local cp, cp_comm, cp_sizes = cp_of(a)
    local world = int(a, "world_size", tp * pp * cp)
    local dp = world // (tp * pp * cp)
    local mbs = int(a, "micro_batch_size", 1)
    local gbs = int(a, "global_batch_size", mbs * dp)
    if cp > 1 and world % (tp * pp * cp) ~= 0 then
        check.fail("megatron: world_size (%d) is not divisible by tensor_model_parallel_size " ..
            "(%d) x pipeline_model_parallel_size (%d) x context_parallel_size (%d)", world, tp,
            pp, cp)
    end
    for _, d in ipairs { { world, tp * pp, "world_size (%d) is not divisible by " ..
                             "tensor_model_parallel_size (%d) x pipeline_model_parallel_size (%d)",
                           tp, pp },
                         { gbs, mbs * dp, "global_batch_size (%d) is not divisible by " ..
                             "micro_batch_size (%d) x data-parallel size (%d)", mbs, dp } } do
        if d[1] % d[2] ~= 0 then check.fail("megatron: " .. d[3], d[1], d[4], d[5]) end
    end
    -- precision: Megatron trains in fp32 unless --fp16 or --bf16
    local fp16, bf16 = bool(a, "fp16", false), bool(a, "bf16", false)
    if fp16 and bf16 then check.fail("megatron: fp16 and bf16 are both set") end
    local dtype = fp16 and "fp16" or bf16 and "bf16" or "fp32"
    local shape = shape_of(a, tp, dtype)
    shape.ce_fusion = ce_fusion_of(a)
    local layers, s = transformer.build(shape)
    local partition, v = split.partition(a, shape.layers, pp)
    local recompute, method, k = recompute_of(a)
    local sp = bool(a, "sequence_parallel", false)
    if sp and tp == 1 then sp = false end -- Megatron turns it off at tp 1
    local memory = memory_of(a, dtype, shape.fp8 and shape.fp8_recipe)
    -- the gradient sync and the sharding span dp x cp (Megatron's
    -- data-parallel group with_context_parallel=True)
    local zero, shard_group, reshard, grad_sync = sharding_of(a, dp * cp, pp,
        grad_sync_of(a, dp * cp, memory.grad_bytes))
    local run = {
        name = a.name, cluster = a.cluster, layers = layers, stages = pp,
        microbatches = gbs // (mbs * dp), dp = dp, tp = tp > 1 and tp or nil,
        cp = cp > 1 and cp or nil, cp_comm_type = cp_comm, cp_hierarchy = cp_sizes,
        sequence_parallel = sp or nil, recompute = recompute, recompute_method = method,
        recompute_modules = a.recompute_modules,
        recompute_layers = k, virtual_stages = v,
        schedule = a.schedule or (v > 1 and "interleaved" or "1f1b"), partition = partition,
        memory = memory, zero = zero, shard_group = shard_group,
        reshard_after_forward = reshard,
        record = a.record, db = a.db, grad_sync = dp * cp > 1 and grad_sync or a.grad_sync,
        tp_overlap = tp_overlap_of(a, sp, tp), optimizer_time = a.optimizer_time,
    }
    moe_flags.run_fields(a, run, { int = int, choice = choice }, tp, sp)
    warn_ignored(ignored)
    return run, s, { ignored = ignored }
end

M.known = known

return M
