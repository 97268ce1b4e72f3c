-- ps.models.megatron{...}: a Megatron-LM launch script's flags (argument
-- names as in megatron/training/arguments.py, dashes as underscores) ->
-- the ps.run table of one training step. Megatron's own defaults apply
-- where a flag is absent (fp32, 4h ffn, vocab padded to a multiple of
-- 128 x tp, no recompute); the derived sizes follow its rules (data-
-- parallel size = world / (tp x pp), microbatches = global batch /
-- (micro batch x dp), blocks split evenly over the pipeline stages with
-- the embedding on the first and the head on the last).
local check = require "pipesim.argcheck"
local transformer = require "pipesim.models.transformer"

local M = {}

-- Flags we read, and pipesim's own additions (cluster, name, record, db,
-- schedule, grad_sync, tp_overlap).
local FLAGS = {
    num_layers = true, hidden_size = true, ffn_hidden_size = true,
    num_attention_heads = true, num_query_groups = true, group_query_attention = true,
    kv_channels = true, swiglu = true, seq_length = true, max_position_embeddings = true,
    vocab_size = true, make_vocab_size_divisible_by = true, fp16 = true, bf16 = true,
    untie_embeddings_and_output_weights = true, position_embedding_type = true,
    normalization = true, disable_bias_linear = true, attention_dropout = true,
    hidden_dropout = true, use_flash_attn = true,
    micro_batch_size = true, global_batch_size = true, world_size = true,
    tensor_model_parallel_size = true, pipeline_model_parallel_size = true,
    num_layers_per_virtual_pipeline_stage = true, sequence_parallel = true,
    recompute_granularity = true, recompute_method = true, recompute_num_layers = true,
    use_distributed_optimizer = true, overlap_grad_reduce = true, overlap_param_gather = true,
    accumulate_allreduce_grads_in_fp32 = true,
    -- pipesim
    cluster = true, name = true, record = true, db = true, schedule = true,
    grad_sync = true, tp_overlap = true, optimizer_time = true,
}
M.FLAGS = FLAGS

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
    if type(v) ~= "boolean" then
        check.fail("megatron: flag '%s' must be a boolean, got %s", k, check.show(v))
    end
    return v
end

-- Megatron's _vocab_size_with_padding (megatron/training/tokenizer/
-- tokenizer.py): pad to a multiple of make_vocab_size_divisible_by x tp.
function M.padded_vocab(v, divisible_by, tp)
    local m = divisible_by * tp
    return ((v + m - 1) // m) * m
end

-- megatron(flags) -> ps.run table. Raises naming the flag.
function M.build(a)
    if type(a) ~= "table" then
        check.fail("megatron: expected a table of Megatron-LM flags, got %s", type(a))
    end
    check.known_fields(a, FLAGS, "megatron")
    local L, h = int(a, "num_layers"), int(a, "hidden_size")
    local heads = int(a, "num_attention_heads")
    local tp = int(a, "tensor_model_parallel_size", 1)
    local pp = int(a, "pipeline_model_parallel_size", 1)
    local world = int(a, "world_size", tp * pp)
    if world % (tp * pp) ~= 0 then
        check.fail("megatron: world_size (%d) is not divisible by tensor_model_parallel_size " ..
            "(%d) x pipeline_model_parallel_size (%d)", world, tp, pp)
    end
    local dp = world // (tp * pp)
    local mbs = int(a, "micro_batch_size", 1)
    local gbs = int(a, "global_batch_size", mbs * dp)
    if gbs % (mbs * dp) ~= 0 then
        check.fail("megatron: global_batch_size (%d) is not divisible by micro_batch_size (%d) " ..
            "x data-parallel size (%d)", gbs, mbs, dp)
    end
    local m = gbs // (mbs * dp)
    if L % pp ~= 0 then
        check.fail("megatron: num_layers (%d) is not divisible by pipeline_model_parallel_size (%d)",
            L, pp)
    end
    local v = 1
    if a.num_layers_per_virtual_pipeline_stage ~= nil then
        local per = int(a, "num_layers_per_virtual_pipeline_stage")
        if (L // pp) % per ~= 0 then
            check.fail("megatron: num_layers_per_virtual_pipeline_stage (%d) does not divide " ..
                "the %d layers of a pipeline stage", per, L // pp)
        end
        v = (L // pp) // per
    end
    -- precision: Megatron trains in fp32 unless --fp16 or --bf16
    local fp16, bf16 = bool(a, "fp16", false), bool(a, "bf16", false)
    if fp16 and bf16 then check.fail("megatron: fp16 and bf16 are both set") end
    local dtype = fp16 and "fp16" or bf16 and "bf16" or "fp32"
    local kv = heads
    if bool(a, "group_query_attention", a.num_query_groups ~= nil) then
        kv = int(a, "num_query_groups", heads)
    end
    local seq = int(a, "seq_length")
    local vocab = M.padded_vocab(int(a, "vocab_size"), int(a, "make_vocab_size_divisible_by", 128), tp)
    local pos = a.position_embedding_type or "learned_absolute"
    if pos ~= "learned_absolute" and pos ~= "rope" then
        check.fail("megatron: position_embedding_type must be 'learned_absolute' or 'rope', got %s",
            check.show(pos))
    end
    local norm = a.normalization or "LayerNorm"
    if norm ~= "LayerNorm" and norm ~= "RMSNorm" then
        check.fail("megatron: normalization must be 'LayerNorm' or 'RMSNorm', got %s", check.show(norm))
    end
    local drop = (a.attention_dropout or 0.1) > 0 or (a.hidden_dropout or 0.1) > 0
    local shape = {
        layers = L, hidden = h, heads = heads, kv_heads = kv, seq = seq, microbatch = mbs,
        vocab = vocab, dtype = dtype, swiglu = bool(a, "swiglu", false),
        ffn_hidden = a.ffn_hidden_size ~= nil and int(a, "ffn_hidden_size") or nil,
        head_dim = a.kv_channels ~= nil and int(a, "kv_channels") or nil,
        tied = not bool(a, "untie_embeddings_and_output_weights", false),
        bias = not bool(a, "disable_bias_linear", false),
        norm = norm == "RMSNorm" and "rmsnorm" or "layernorm",
        position = pos == "rope" and "rope" or "learned",
        max_positions = a.max_position_embeddings ~= nil and int(a, "max_position_embeddings") or nil,
        dropout = drop, flash_attention = bool(a, "use_flash_attn", false),
        name = a.name,
    }
    if shape.ffn_hidden == nil and shape.swiglu then
        -- Megatron (arguments.py): --swiglu without --ffn-hidden-size
        -- takes int((4 * h * 2 / 3) / 64) * 64, a multiple of 64 below
        shape.ffn_hidden = math.floor(4 * h * 2 / 3 / 64) * 64
    end
    local layers = transformer.build(shape)
    -- Megatron's layer split: num_layers / (pp * v) blocks per model
    -- chunk, the embedding before the first and the head after the last
    local per = L // (pp * v)
    local partition = {}
    for s = 1, pp * v do partition[s] = per end
    partition[1] = partition[1] + 1
    partition[pp * v] = partition[pp * v] + 1
    -- recompute: --recompute-granularity full needs a method (Megatron-
    -- Core's TransformerBlock raises otherwise); selective takes none
    local gran = a.recompute_granularity
    local recompute = "none"
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
    local method, k
    if gran == "full" then
        recompute = "full"
        method = a.recompute_method
        if method ~= "uniform" and method ~= "block" then
            check.fail("megatron: recompute_granularity 'full' needs recompute_method 'uniform' " ..
                "or 'block', got %s", check.show(method))
        end
        k = int(a, "recompute_num_layers", 1)
    elseif gran == "selective" then
        recompute = "selective"
    elseif gran ~= nil then
        check.fail("megatron: recompute_granularity must be 'full' or 'selective', got %s",
            check.show(gran))
    end
    local sp = bool(a, "sequence_parallel", false)
    if sp and tp == 1 then sp = false end -- Megatron turns it off at tp 1
    -- bytes per parameter (Megatron's theoretical_memory_usage.py: 18 =
    -- 16-bit weight 2 + fp32 main gradient 4 + Adam's fp32 master weight
    -- and moments 12, the last sharded by the distributed optimizer);
    -- fp32 training keeps no separate master copy: 4 + 4 + 8.
    -- The gradient buffer, which the data-parallel reduction moves, is
    -- fp32 only with --accumulate-allreduce-grads-in-fp32, a store_true
    -- flag that arguments.py forces on for bf16 alone ("bfloat16 requires
    -- gradient accumulation and all-reduce to be done in fp32"); with fp16
    -- the DDP buffer takes the parameter's dtype (grad_dtype = torch.float
    -- if accumulate_allreduce_grads_in_fp32 else param.dtype), 2 bytes.
    -- (Its fp32 copy for the optimizer lives only during the step, after
    -- the activations are freed: not charged.)
    local fp32_grads = dtype ~= "fp16" or bool(a, "accumulate_allreduce_grads_in_fp32", false)
    local memory = dtype == "fp32" and { weight_bytes = 4, grad_bytes = 4, optimizer_bytes = 8 }
        or { weight_bytes = 2, grad_bytes = fp32_grads and 4 or 2, optimizer_bytes = 12 }
    -- gradient sync (Megatron-Core's DistributedDataParallel): without
    -- --overlap-grad-reduce (the default) all gradients are reduced in one
    -- go after the backward; with it, in buckets of max(40M, 1M x dp)
    -- elements as the backward produces them (DistributedDataParallelConfig
    -- bucket_size)
    -- --overlap-param-gather: the distributed optimizer's all-gather of the
    -- updated parameters overlaps the next step's forward (core/step/dp.h);
    -- Megatron asserts the distributed optimizer and --overlap-grad-reduce
    -- for it (arguments.py)
    local pg = bool(a, "overlap_param_gather", false)
    if pg and not (bool(a, "use_distributed_optimizer", false) and
                   bool(a, "overlap_grad_reduce", false)) then
        check.fail("megatron: overlap_param_gather needs use_distributed_optimizer and " ..
            "overlap_grad_reduce")
    end
    local grad_sync = a.grad_sync
    if grad_sync == nil then
        local gb = memory.grad_bytes
        if bool(a, "overlap_grad_reduce", false) then
            local b = math.max(40e6, 1e6 * dp) * gb
            -- bucketed = "first": Megatron-Core's DDP cuts only pipeline
            -- rank 0's first model chunk into buckets (bucket_size = None on
            -- pp ranks > 0, "not on the critical path", and for chunks > 0
            -- via get_model's disable_bucketing;
            -- megatron/core/distributed/distributed_data_parallel.py,
            -- megatron/training/training.py, core 0.20.0 commit d98e8a6
            -- and core_v0.19.0 5be9626; core/step/dp.c chunk_bucketed). The
            -- all-gathers of --overlap-param-gather follow the same buckets.
            grad_sync = { bucket = b, first_bucket = b, bucketed = "first", overlap = true,
                          overlap_param_gather = (pg and dp > 1) or nil }
        else
            grad_sync = { bucket = 2 ^ 53, first_bucket = 2 ^ 53, overlap = false }
        end
    end
    local run = {
        name = a.name, cluster = a.cluster, layers = layers, stages = pp, microbatches = m,
        dp = dp, tp = tp, sequence_parallel = sp or nil, recompute = recompute,
        recompute_method = method, recompute_layers = k, virtual_stages = v,
        schedule = a.schedule or (v > 1 and "interleaved" or "1f1b"), partition = partition,
        memory = memory, zero = bool(a, "use_distributed_optimizer", false) and dp > 1 and 1 or nil,
        record = a.record, db = a.db, grad_sync = dp > 1 and grad_sync or a.grad_sync,
        tp_overlap = a.tp_overlap,
        optimizer_time = a.optimizer_time,
    }
    if tp == 1 then run.tp = nil end
    return run, shape
end

return M
