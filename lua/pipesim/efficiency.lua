-- Efficiency figures of a training step (issue 27 item 16), as Megatron-LM
-- and NeMo report them: model FLOPs per step, model TFLOP/s per GPU, MFU
-- against the device's dense peak at the run's precision, hardware TFLOP/s
-- (with recompute) and tokens per second per GPU. This module computes the
-- step's figures before the run (ps.run puts them in meta.efficiency, the
-- recorder writes them and the rates over the simulated step: rec/eff.c);
-- rates() is the same division for ps.run's result table.
--
-- Model FLOPs follow Megatron-LM's num_floating_point_operations
-- (megatron/training/training.py, NVIDIA/Megatron-LM 001b00c, the
-- transformer_flops branch): per token of the global batch,
--   3 x 2 x [ L x ( h(q + 2 kv) + q s/2 x 2 + q h + ffn_factor h f ) + h V ]
-- with q = kv_channels x heads, kv = kv_channels x query groups, ffn_factor
-- 3 with SwiGLU and 2 without, V the (padded) vocabulary: 3 for forward,
-- weight gradient and input gradient, 2 FLOPs per multiply-add. Causal
-- attention is HALVED ("causal mask (only half of the mask is non-zero)"):
-- Megatron-LM's current convention, and Megatron-Bridge's (flop_utils.py,
-- `seq_len / 2`). Older Megatron (Narayanan et al. 2021, appendix; the
-- 12 x s/h term) and NeMo 2.0's flops_formulas.py (gpt3, llama2/3: the
-- 4 b s^2 h term, 12 s/h) count the full s^2: their model FLOPs are larger
-- by 6 B s^2 q L. MoE, MLA and MTP models take the same function's terms
-- for them at d98e8a6 (model_token_flops below). MFU (PaLM's, Chowdhery
-- et al. 2022, Appendix B) is model FLOP/s over peak FLOP/s; hardware
-- FLOPs add the recomputed forwards
-- (Korthikanti et al. 2022, Sec. 6.3, "hardware FLOPs utilization").
-- Rates divide by step time x GPUs, as Megatron-LM's training_log divides
-- by elapsed_time_per_iteration x world_size and NeMo's
-- FLOPsMeasurementCallback by step time x world size.
local core = require "pipesim.core"

local M = {}

-- The device field holding the dense peak of each precision. FP8's peak is
-- a device's `fp8_flops` (dense, no sparsity); a precision missing here
-- leaves MFU NULL and says so.
M.PEAK_FIELD = { bf16 = "flops", fp16 = "flops", fp8 = "fp8_flops" }

-- The peaks of a ps.cluster spec's device (numbers, unit strings parsed):
-- { flops = ..., fp8_flops = ..., mixed = true when per-rank `devices`
-- change the peak }. nil without a device.
function M.device_peaks(spec)
    local d = type(spec) == "table" and spec.device
    if type(d) ~= "table" then return nil end
    local out = {}
    for _, field in pairs(M.PEAK_FIELD) do
        local v = d[field]
        if type(v) == "string" then
            local ok, n = pcall(core.parse, v, "flop_rate")
            v = ok and n or nil
        end
        if type(v) == "number" and v > 0 then out[field] = v end
    end
    if type(spec.devices) == "table" then
        for _, o in pairs(spec.devices) do
            if type(o) == "table" and o.flops ~= nil then out.mixed = true end
        end
    end
    return out
end

-- The precision of a model shape: "fp8" when the shape or the run asks
-- for FP8 (an `fp8` field), else the shape's dtype.
function M.precision(shape, spec)
    if shape.fp8 or (spec and spec.fp8) then return "fp8" end
    return shape.dtype
end

-- Forward FLOPs per token of a block's attention core (QK^T and the
-- weighted sum, causal halved): 2 q s; multi-latent attention's scores
-- run at qk_head_dim + qk_pos_emb_head_dim per head, its values at
-- v_head_dim (Megatron-LM d98e8a6, standard_self_attn_core_term). These
-- per-token figures are floats: times a step's tokens they pass 2^63.
local function core_token_flops(s)
    if s.multi_latent_attention then
        return 1.0 * s.heads * (s.qk_head_dim + s.qk_pos_emb_head_dim + s.v_head_dim) * s.seq
    end
    return 2.0 * s.heads * s.head_dim * s.seq
end

-- Forward FLOPs per token of a block's attention linears. MLA: Megatron-LM
-- d98e8a6's MLA branch of transformer_flops, its latent norms counted as
-- the "+ 1" columns: q_lora (h + H (d_qk + d_rope) + 1) (or h H (d_qk +
-- d_rope) without q_lora_rank), kv_lora (h + H (d_qk + d_v) + 1) + h d_rope,
-- and the output H d_v h.
local function attn_linear_token_flops(s)
    local h, H = 1.0 * s.hidden, s.heads
    if s.multi_latent_attention then
        local dq = s.qk_head_dim + s.qk_pos_emb_head_dim
        local q = s.q_lora_rank and s.q_lora_rank * (h + H * dq + 1) or h * H * dq
        return 2 * (q + s.kv_lora_rank * (h + H * (s.qk_head_dim + s.v_head_dim) + 1)
            + h * s.qk_pos_emb_head_dim + H * s.v_head_dim * h)
    end
    local q, kv = H * s.head_dim, s.kv_heads * s.head_dim
    return 2 * (h * (q + 2 * kv) + q * h)
end

-- Forward FLOPs of one block per token (Megatron's bracket above, without
-- the x3), with causal attention halved. A MoE block's shape (one with
-- `experts`, models/moe.lua) runs topk experts of expert_ffn and the
-- shared experts' shared_ffn instead of ffn_hidden, the router left out
-- as Megatron leaves it; `mtp` adds a multi-token prediction module's
-- norms and projection, 3h + 2h^2 (Megatron's "MTP norms and proj").
function M.block_token_flops(s, mtp)
    local h = 1.0 * s.hidden
    local ffn = s.swiglu and 3 or 2
    local f = s.experts and s.expert_ffn * s.topk + s.shared_ffn or s.ffn_hidden
    local extra = mtp and 2 * (3 * h + 2 * h * h) or 0
    return attn_linear_token_flops(s) + core_token_flops(s) + 2 * ffn * h * f + extra
end

-- Megatron-LM's model FLOPs of `sequences` sequences through `blocks`
-- blocks of shape s, with the logit layer when `head`.
function M.model_flops(s, sequences, blocks, head)
    local per_token = blocks * M.block_token_flops(s) + (head and 2 * s.hidden * s.vocab or 0)
    return 3 * sequences * s.seq * per_token
end

-- Forward FLOPs recomputed per token and block: selective recompute
-- repeats the core attention (QK^T and the weighted sum, causal halved;
-- Korthikanti et al. 2022, Sec. 4.2), full recompute the whole block.
-- With recompute_modules (Megatron's --recompute-modules, lua/pipesim/
-- recompute.lua) selective repeats the core only under core_attn, and
-- mla_up_proj MLA's query and kv up projections (2kn per token each);
-- layernorm and moe_act repeat memory-bound kernels, no GEMM FLOPs; mlp
-- a dense block's MLP, shared_experts a MoE block's shared MLP, moe the
-- shared MLP, the router's GEMM and the token's top-k experts' MLPs.
local function mlp_token_flops(s, f) return (s.swiglu and 6 or 4) * s.hidden * f end
local function module_token_flops(s, n, set)
    if n == "mlp" and not s.experts then return mlp_token_flops(s, s.ffn_hidden or 0) end
    if n == "shared_experts" and s.experts and not set.moe then
        return mlp_token_flops(s, s.shared_ffn or 0)
    end
    if n == "moe" and s.experts then
        return mlp_token_flops(s, s.shared_ffn or 0) + 2 * s.hidden * s.experts +
            s.topk * mlp_token_flops(s, s.expert_ffn)
    end
    return 0
end
local function recomputed_token_flops(s, mode, mtp, modules)
    if mode == "selective" and modules ~= nil then
        local seen, f, set = {}, 0, {}
        for _, n in ipairs(modules) do set[n] = true end
        for _, n in ipairs(modules) do
            if n == "core_attn" and not seen[n] then f = f + core_token_flops(s) end
            if not seen[n] then f = f + module_token_flops(s, n, set) end
            if n == "mla_up_proj" and not seen[n] and s.multi_latent_attention then
                for _, l in ipairs(require("pipesim.models.mla").linears(s)) do
                    if l.split and not l.row then f = f + 2 * l.k * l.n end
                end
            end
            seen[n] = true
        end
        return f
    end
    if mode == "selective" then return core_token_flops(s) end
    if mode == "full" then return M.block_token_flops(s, mtp) end
    return 0
end

-- Blocks recomputed under full recompute: all of them (method uniform:
-- nil), or the first k of each stage chunk of the partition (method
-- block: the set of their layer indices, and how many), as parallel.lua
-- marks them (Megatron's --recompute-method).
local function full_marks(spec, partition)
    if spec.recompute_method ~= "block" or type(partition) ~= "table" then return nil end
    local k = math.tointeger(spec.recompute_layers) or 1
    local marked, at, n = {}, 0, 0
    for _, count in ipairs(partition) do
        local b = 0
        for i = at + 1, at + count do
            if spec.layers[i].kind == "block" and b < k then marked[i], b = true, b + 1 end
        end
        n, at = n + b, at + count
    end
    return marked, n
end

-- A model of MoE, multi-latent attention or multi-token prediction blocks
-- (models/moe.lua), Megatron-LM d98e8a6's transformer_flops: its dense and
-- MoE blocks have shapes of their own, so each layer counts by its own,
-- an MTP block (mtp = true) as a block with its norms and projection, and
-- each MTP head as a head (Megatron's logits x (mtp_num_layers + 1)).
-- Returns forward FLOPs per token of the model and of its recompute; nil
-- when a layer has no shape of the model's sequence.
local function model_token_flops(spec, partition, mode, s0)
    local marks = mode == "full" and full_marks(spec, partition)
    local model, again = 0, 0
    for i, l in ipairs(spec.layers) do
        local s = l.shape
        if type(s) ~= "table" or s.seq ~= s0.seq or s.microbatch ~= s0.microbatch then return nil end
        if l.kind == "block" then
            model = model + M.block_token_flops(s, l.mtp)
            if mode ~= "full" or not marks or marks[i] then
                again = again + recomputed_token_flops(s, mode, l.mtp, spec.recompute_modules)
            end
        elseif l.kind == "head" then
            model = model + 2 * s.hidden * s.vocab
        end
    end
    return model, again
end

local function number(v, kind)
    if type(v) == "string" then
        local ok, n = pcall(core.parse, v, kind)
        return ok and n or nil
    end
    return type(v) == "number" and v or nil
end

-- Plain layers: FLOPs per microbatch of forward, backward (bwd_flops, the
-- split parts' sum, or twice the forward: the core's default) and of the
-- forward again under checkpointing. nil when a layer has no fwd_flops.
local function plain_flops(layers)
    -- floats: integer FLOP counts times microbatches and dp overflow
    -- Lua's 64-bit integers (Llama 3 405B: ~4e18 a step)
    local f, b = 0.0, 0.0
    for _, l in ipairs(layers) do
        local fw = number(l.fwd_flops, "flop")
        if not fw then return nil end
        local bw = number(l.bwd_flops, "flop")
        if not bw then
            local i, w = number(l.bwd_input_flops, "flop"), number(l.bwd_weight_flops, "flop")
            bw = (i and w) and i + w or 2 * fw
        end
        f, b = f + fw, b + bw
    end
    return f, b
end

-- The peak of `precision` on the cluster's device, or nil and why not.
local function peak_of(peaks, precision)
    if not peaks then return nil, "the cluster states no device peak" end
    if peaks.mixed then return nil, "ranks have devices of different peaks" end
    local field = "flops" -- plain layers: the device's peak as given
    if precision then field = M.PEAK_FIELD[precision] end
    local p = field and peaks[field]
    if not p then
        return nil, string.format("the device has no %s dense peak", precision or "")
    end
    return p
end

-- t with its precision, the peak of it and, when there is none, why not.
local function with_peak(t, precision, peaks)
    t.precision = precision
    local why
    t.peak_flops, why = peak_of(peaks, precision)
    t.note = why and ("no MFU: " .. why) or nil
    return t
end

-- The step's figures for ps.run's meta.efficiency (core/bind/efficiency.c):
-- { model_flops, hardware_flops, tokens, gpus, peak_flops, precision,
-- note }; figures that cannot be computed are left out and `note` says
-- why. spec: the ps.run table (its layers as the user gave them);
-- partition: layers per stage chunk; peaks: device_peaks of the cluster.
function M.figures(spec, partition, peaks)
    local layers = spec.layers
    local dp, mb = math.tointeger(spec.dp) or 1, math.tointeger(spec.microbatches) or 1
    local t = {
        gpus = (math.tointeger(spec.stages) or 1) * dp * (math.tointeger(spec.tp) or 1)
            * (math.tointeger(spec.cp) or 1),
    }
    local shape = layers[1] and layers[1].shape
    local mode = spec.recompute or (spec.checkpoint == true and "full") or "none"
    if type(shape) == "table" and (shape.experts or shape.multi_latent_attention
        or (shape.mtp_layers or 0) > 0) then
        local model, again = model_token_flops(spec, partition, mode, shape)
        if model then
            local tokens = shape.microbatch * mb * dp * shape.seq
            t.tokens, t.model_flops = tokens, 3 * tokens * model
            t.hardware_flops = t.model_flops + tokens * again
            return with_peak(t, M.precision(shape, spec), peaks)
        end
        shape = nil
    end
    if type(shape) == "table" then
        local blocks, head = 0, false
        for _, l in ipairs(layers) do
            if l.shape ~= shape then shape = nil; break end
            if l.kind == "block" then blocks = blocks + 1 elseif l.kind == "head" then head = true end
        end
        if shape then
            local sequences = shape.microbatch * mb * dp
            t.tokens = sequences * shape.seq
            t.model_flops = M.model_flops(shape, sequences, blocks, head)
            local again = mode == "full" and select(2, full_marks(spec, partition)) or blocks
            t.hardware_flops = t.model_flops
                + sequences * shape.seq * again * recomputed_token_flops(shape, mode, nil,
                    spec.recompute_modules)
            return with_peak(t, M.precision(shape, spec), peaks)
        end
    end
    local f, b = plain_flops(layers)
    if not f then
        t.note = "no FLOP figures, layers given by time carry no FLOPs"
        return t
    end
    t.model_flops = (f + b) * mb * dp
    t.hardware_flops = t.model_flops + (spec.checkpoint == true and f * mb * dp or 0)
    local why
    t.peak_flops, why = peak_of(peaks, nil)
    t.note = "plain layers: FLOPs from fwd_flops, no tokens without a sequence length, "
        .. (why and "no MFU: " .. why or "MFU against the device's flops")
    return t
end

-- The rates of the step's figures over its time, the run row's columns
-- (rec/eff.c computes the same): model_tflops_per_gpu, mfu,
-- hardware_tflops_per_gpu, tokens_per_s_per_gpu; nil where unknown.
function M.rates(t, makespan)
    local g = t.gpus
    local known = makespan and makespan > 0 and makespan < math.huge and g and g > 0
    local function per(v, scale)
        if known and v and v > 0 and scale and scale > 0 then return v / (makespan * g * scale) end
    end
    -- one constructor: the table is sized once (ps.run builds one per run)
    return {
        model_flops = t.model_flops, hardware_flops = t.hardware_flops, tokens = t.tokens,
        gpus = g, peak_flops = t.peak_flops, precision = t.precision, note = t.note,
        model_tflops_per_gpu = per(t.model_flops, 1e12), mfu = per(t.model_flops, t.peak_flops),
        hardware_tflops_per_gpu = per(t.hardware_flops, 1e12), tokens_per_s_per_gpu = per(t.tokens, 1),
    }
end

return M
