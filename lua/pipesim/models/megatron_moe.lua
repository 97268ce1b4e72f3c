-- The mixture-of-experts, multi-latent attention and multi-token
-- prediction flags of ps.models.megatron (models/megatron.lua): Megatron-
-- LM's names (megatron/training/arguments.py, the version of
-- models/megatron_flags.lua) to the shape's fields (models/moe.lua,
-- models/mla.lua) and to ps.run's expert-parallel fields (ep, etp,
-- moe_dispatcher). A flag that would change nothing (an MoE flag without
-- --num-experts, an MLA size without --multi-latent-attention) is an
-- error unless given at Megatron's default.
local check = require "pipesim.argcheck"
local known = require "pipesim.models.megatron_flags"

local M = {}

-- megatron flag -> shape field, for the flags copied as they are
local MOE_SHAPE = {
    moe_router_topk = "topk", moe_ffn_hidden_size = "expert_ffn",
    moe_shared_expert_intermediate_size = "shared_ffn", moe_router_num_groups = "router_groups",
    moe_router_group_topk = "router_group_topk",
}
local MLA_SIZES = { "q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim",
                    "v_head_dim" }
-- the MoE flags read here (each needs num_experts unless at its default)
local MOE_FLAGS = {
    "moe_router_topk", "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size",
    "moe_layer_freq", "moe_expert_capacity_factor",
    "moe_pad_expert_input_to_capacity", "moe_grouped_gemm",
    "moe_permute_fusion", "moe_router_num_groups", "moe_router_group_topk",
    "moe_dispatch_fwd_dtype", "moe_combine_bwd_dtype", "moe_token_dispatcher_type",
    "expert_model_parallel_size", "expert_tensor_parallel_size", "moe_flex_dispatcher_backend",
    "overlap_moe_expert_parallel_comm", "delay_wgrad_compute",
}

local function at_default(a, k)
    local d = known.DEFAULTS[k]
    return a[k] == nil or (d ~= known.NONE and a[k] == d)
end

-- --moe-layer-freq as Megatron's moe_freq_type takes it: an integer, a
-- list, or a Python list expression such as "([0]*3+[1]*58)" (terms of
-- [x, y, ...] optionally *n, joined by +). Returns an integer or a list.
function M.layer_freq(v)
    if type(v) ~= "string" then return v end
    local body = v:gsub("%s", "")
    body = body:match("^%((.*)%)$") or body
    local out = {}
    for term in (body .. "+"):gmatch("([^+]*)%+") do
        local items, times = term:match("^%[([%d,]*)%]%*?(%d*)$")
        if not items then
            check.fail("megatron: moe_layer_freq %s is not an integer or a list expression such " ..
                "as '([0]*3+[1]*58)'", check.show(v))
        end
        for _ = 1, tonumber(times) or 1 do
            for x in items:gmatch("%d+") do out[#out + 1] = tonumber(x) end
        end
    end
    return out
end

-- The flags read here (for tests walking them).
M.FLAGS = {}
for _, k in ipairs(MOE_FLAGS) do M.FLAGS[k] = true end
for _, k in ipairs(MLA_SIZES) do M.FLAGS[k] = true end
M.FLAGS.num_experts, M.FLAGS.multi_latent_attention, M.FLAGS.mtp_num_layers = true, true, true

-- The MoE, MLA and MTP shape fields from the flags (merged into shape).
-- h = { int, bool, choice }: models/megatron.lua's readers.
function M.shape_fields(a, shape, h)
    if a.num_experts == nil then
        for _, k in ipairs(MOE_FLAGS) do
            if not at_default(a, k) then
                check.fail("megatron: flag '%s' needs num_experts (Megatron builds no MoE layer " ..
                    "without it)", k)
            end
        end
    else
        shape.experts = h.int(a, "num_experts")
        for flag, field in pairs(MOE_SHAPE) do
            if a[flag] ~= nil then shape[field] = h.int(a, flag) end
        end
        shape.topk = shape.topk or known.DEFAULTS.moe_router_topk
        if a.moe_layer_freq ~= nil then shape.moe_layers = M.layer_freq(a.moe_layer_freq) end
        shape.capacity_factor = a.moe_expert_capacity_factor
        shape.pad_to_capacity = h.bool(a, "moe_pad_expert_input_to_capacity", false)
        shape.grouped_gemm = h.bool(a, "moe_grouped_gemm", false)
        shape.permute_fusion = h.bool(a, "moe_permute_fusion", false)
        shape.dispatch_dtype = h.choice(a, "moe_dispatch_fwd_dtype", { "bf16", "fp8" }, "bf16")
        shape.combine_grad_dtype = h.choice(a, "moe_combine_bwd_dtype", { "bf16", "fp8" }, "bf16")
    end
    if h.bool(a, "multi_latent_attention", false) then
        shape.multi_latent_attention = true
        for _, k in ipairs(MLA_SIZES) do
            if a[k] ~= nil then shape[k] = h.int(a, k) end
        end
    else
        for _, k in ipairs(MLA_SIZES) do
            if not at_default(a, k) then
                check.fail("megatron: flag '%s' needs multi_latent_attention", k)
            end
        end
    end
    if a.mtp_num_layers ~= nil then
        shape.mtp_layers = check.int(a.mtp_num_layers, "megatron", "mtp_num_layers", 0, 1 << 20)
    end
end

-- ps.run's expert-parallel fields (moepar's ps.run keys: ep, etp,
-- moe_dispatcher) into run, with Megatron's checks (arguments.py
-- validate_args): num_experts divisible by the expert-parallel size, and
-- sequence parallelism with MoE under tensor parallelism.
-- --moe-token-dispatcher-type defaults to allgather, as Megatron's.
function M.run_fields(a, run, h, tp, sp)
    if a.num_experts == nil then return end
    local ep = h.int(a, "expert_model_parallel_size", 1)
    if a.num_experts % ep ~= 0 then
        check.fail("megatron: num_experts (%d) is not divisible by expert_model_parallel_size " ..
            "(%d)", a.num_experts, ep)
    end
    if tp > 1 and not sp then
        check.fail("megatron: num_experts with tensor_model_parallel_size %d needs " ..
            "sequence_parallel (Megatron: \"When using MoE with tensor parallelism, sequence " ..
            "parallelism must be used\")", tp)
    end
    run.ep = ep > 1 and ep or nil
    if a.expert_tensor_parallel_size ~= nil then
        run.etp = h.int(a, "expert_tensor_parallel_size")
    end
    run.moe_dispatcher = h.choice(a, "moe_token_dispatcher_type",
        { "allgather", "alltoall", "flex" }, "allgather")
    -- the flex dispatcher's kernels: DeepEP (Megatron's default) or
    -- HybridEP, both costed as models/moe_flex.lua; without flex the
    -- backend changes nothing
    local be = h.choice(a, "moe_flex_dispatcher_backend", { "deepep", "hybridep" }, "deepep")
    if be ~= "deepep" and run.moe_dispatcher ~= "flex" then
        check.fail("megatron: moe_flex_dispatcher_backend '%s' needs moe_token_dispatcher_type " ..
            "'flex' (it changes nothing otherwise)", be)
    end
    M.overlap_fields(a, run, ep)
end

-- --overlap-moe-expert-parallel-comm (Megatron-Core 0.14 on: the
-- combined 1F1B of pipeline_parallel/combined_1f1b.py, ps.run's
-- ep_overlap, core/par/ep.c) with the checks of transformer_config.py
-- __post_init__ (d98e8a64dd) that concern a launch script; ps.run checks
-- the schedule and the dispatcher. --delay-wgrad-compute needs it, as
-- Megatron asserts; it defers the experts' weight gradients so that the
-- backward's last all-to-all has compute beside it, which pipesim's pair
-- already gives every all-to-all (docs/moe.md), so it adds nothing here.
function M.overlap_fields(a, run, ep)
    local on = a.overlap_moe_expert_parallel_comm
    if on ~= nil and type(on) ~= "boolean" then
        check.fail("megatron: overlap_moe_expert_parallel_comm must be true or false, got %s",
            check.show(on))
    end
    local delay = a.delay_wgrad_compute
    if delay ~= nil and type(delay) ~= "boolean" then
        check.fail("megatron: delay_wgrad_compute must be true or false, got %s",
            check.show(delay))
    end
    if delay and not on then
        check.fail("megatron: delay_wgrad_compute needs overlap_moe_expert_parallel_comm " ..
            "(Megatron: \"overlap_moe_expert_parallel_comm must be enabled when enabling " ..
            "delay_wgrad_compute\")")
    end
    if not on then return end
    if ep < 2 then
        check.fail("megatron: overlap_moe_expert_parallel_comm needs expert_model_parallel_size " ..
            "> 1 (Megatron: \"overlap_moe_expert_parallel_comm is only supported with expert " ..
            "model parallelism\")")
    end
    if (a.pipeline_model_parallel_size or 1) > 1 and (run.virtual_stages or 1) < 2 then
        check.fail("megatron: overlap_moe_expert_parallel_comm with pipeline_model_parallel_size " ..
            "%d needs virtual pipeline stages (Megatron: \"virtual_pipeline_model_parallel_size " ..
            "must be specified when pipeline_model_parallel_size > 1\")",
            a.pipeline_model_parallel_size)
    end
    if a.recompute_granularity == "full" then
        check.fail("megatron: overlap_moe_expert_parallel_comm with recompute_granularity " ..
            "'full' (Megatron: \"disable full recomputation when enabling " ..
            "overlap_moe_expert_parallel_comm\")")
    end
    if (a.mtp_num_layers or 0) > 1 then
        check.fail("megatron: overlap_moe_expert_parallel_comm with mtp_num_layers %d (Megatron: " ..
            "\"MTP layernum only supports 1 when enabling overlap_moe_expert_parallel_comm\")",
            a.mtp_num_layers)
    end
    run.ep_overlap = true
end

return M
