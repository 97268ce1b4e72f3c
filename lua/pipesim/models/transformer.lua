-- Decoder-only transformer as a pipesim layer list: embedding, one entry per
-- block, output head with the loss. Costs are per microbatch, in base units
-- (FLOP, bytes, parameter counts). Every formula below names its source;
-- with GPT defaults (layernorm, biases, GeLU MLP of 4h, dropout, 16-bit)
-- the block reduces exactly to the published closed forms, and the tests
-- check that.
local check = require "pipesim.argcheck"
local core = require "pipesim.core"
local fp8 = require "pipesim.models.fp8"
local mla = require "pipesim.models.mla"
local moe = require "pipesim.models.moe"

local M = {}

-- Bytes per element of activations and of the stage-boundary tensor.
local DTYPE_BYTES = { bf16 = 2, fp16 = 2, fp32 = 4 }

local FIELDS = {
    layers = true, hidden = true, heads = true, kv_heads = true,
    head_dim = true, ffn_hidden = true, seq = true, microbatch = true,
    vocab = true, dtype = true, swiglu = true, tied = true, bias = true,
    norm = true, position = true, max_positions = true, dropout = true,
    flash_attention = true, name = true, squared_relu = true, ce_fusion = true,
    -- FP8 (models/fp8.lua)
    fp8 = true, fp8_recipe = true, fp8_params = true, fp8_wgrad = true, fp8_head = true,
    fp8_bf16_first = true, fp8_bf16_last = true,
    -- multi-token prediction (M.build)
    mtp_layers = true,
}
-- mixture of experts (models/moe.lua) and multi-latent attention
-- (models/mla.lua)
for _, set in ipairs { moe.FIELDS, mla.FIELDS } do
    for k in pairs(set) do FIELDS[k] = true end
end
M.FIELDS = FIELDS

local function default(v, d)
    if v == nil then return d end
    return v
end

local function boolean(v, what)
    if type(v) ~= "boolean" then
        check.fail("transformer: %s must be a boolean, got %s", what, check.show(v))
    end
    return v
end

-- The FP8 fields (models/fp8.lua): fp8 is the format ('e4m3' or
-- 'hybrid', Megatron's --fp8-format; false or absent: 16-bit), fp8_recipe
-- Megatron's --fp8-recipe (default 'delayed', Megatron's), fp8_params its
-- --fp8-param-gather (weights kept and all-gathered in FP8), fp8_wgrad
-- false its --no-fp8-wgrad, fp8_head its --fp8-output-proj (mxfp8 only),
-- fp8_bf16_first / fp8_bf16_last the blocks at each end of the model kept
-- in BF16 (--first-last-layers-bf16 with --num-layers-at-start/end-in-
-- bf16). The format changes no time or memory (E4M3 and E5M2 GEMMs run
-- alike); it is kept for the record.
local function normalize_fp8(c, s)
    local f = c.fp8
    if f == nil or f == false then
        for _, k in ipairs { "fp8_recipe", "fp8_params", "fp8_wgrad", "fp8_head",
                             "fp8_bf16_first", "fp8_bf16_last" } do
            if c[k] ~= nil then
                check.fail("transformer: field '%s' needs fp8 ('e4m3' or 'hybrid')", k)
            end
        end
        s.fp8 = false
        return
    end
    if not fp8.FORMATS[f] then
        check.fail("transformer: fp8 must be 'e4m3' or 'hybrid' (or false), got %s", check.show(f))
    end
    if s.dtype == "fp32" then
        check.fail("transformer: fp8 needs 16-bit training (dtype 'bf16' or 'fp16'), got dtype 'fp32'")
    end
    s.fp8 = f
    s.fp8_recipe = default(c.fp8_recipe, "delayed")
    if not fp8.RECIPES[s.fp8_recipe] then
        check.fail("transformer: unknown fp8_recipe %s (known: %s)", check.show(s.fp8_recipe),
            check.keys(fp8.RECIPES))
    end
    s.fp8_params = boolean(default(c.fp8_params, false), "fp8_params")
    s.fp8_wgrad = boolean(default(c.fp8_wgrad, true), "fp8_wgrad")
    s.fp8_head = boolean(default(c.fp8_head, false), "fp8_head")
    if s.fp8_head and s.fp8_recipe ~= "mxfp8" then
        check.fail("transformer: fp8_head (Megatron's --fp8-output-proj) needs fp8_recipe " ..
            "'mxfp8', got %s", check.show(s.fp8_recipe))
    end
    for _, k in ipairs { "fp8_bf16_first", "fp8_bf16_last" } do
        s[k] = check.int(default(c[k], 0), "transformer", k, 0, s.layers)
    end
    if s.fp8_bf16_first + s.fp8_bf16_last > 0 and s.fp8_recipe == "delayed" then
        -- megatron/core/fp8_utils.py get_fp8_context
        check.fail("transformer: fp8_bf16_first/fp8_bf16_last need a recipe other than " ..
            "'delayed' (Megatron: \"Delayed scaling does not support first / last layer in BF16\")")
    end
end

-- Fills defaults and validates a shape table; returns a new table.
-- GPT style (swiglu = false): layernorm, biases, learned positions, dropout.
-- Llama style (swiglu = true): RMSNorm, no biases, rotary positions, no
-- dropout. Each of those can be overridden on its own.
local function normalize(c)
    if type(c) ~= "table" then
        check.fail("transformer: expected a table of shape fields, got %s", type(c))
    end
    check.known_fields(c, FIELDS, "transformer")
    local s = {}
    local function int(k, d)
        local v = default(c[k], d)
        if v == nil then check.fail("transformer: missing field '%s'", k) end
        -- as many layers as ps.run takes; other sizes up to 2^53 (exact)
        s[k] = check.int(v, "transformer", k, 1, k == "layers" and core.max_layers or 1 << 53)
    end
    int("layers"); int("hidden"); int("heads"); int("seq"); int("vocab")
    int("microbatch", 1)
    int("kv_heads", s.heads)
    if c.head_dim == nil and s.hidden % s.heads ~= 0 then
        check.fail("transformer: hidden (%d) is not a multiple of heads (%d); give head_dim",
            s.hidden, s.heads)
    end
    int("head_dim", s.hidden // s.heads)
    if s.heads % s.kv_heads ~= 0 then
        check.fail("transformer: heads (%d) is not a multiple of kv_heads (%d)",
            s.heads, s.kv_heads)
    end
    int("ffn_hidden", 4 * s.hidden)
    s.dtype = default(c.dtype, "bf16")
    if not DTYPE_BYTES[s.dtype] then
        check.fail("transformer: unknown dtype %s (known: %s)", check.show(s.dtype),
            check.keys(DTYPE_BYTES))
    end
    s.swiglu = boolean(default(c.swiglu, false), "swiglu")
    local llama = s.swiglu
    s.tied = boolean(default(c.tied, false), "tied")
    s.bias = boolean(default(c.bias, not llama), "bias")
    s.dropout = boolean(default(c.dropout, not llama), "dropout")
    s.flash_attention = boolean(default(c.flash_attention, false), "flash_attention")
    s.norm = default(c.norm, llama and "rmsnorm" or "layernorm")
    if s.norm ~= "layernorm" and s.norm ~= "rmsnorm" then
        check.fail("transformer: norm must be 'layernorm' or 'rmsnorm', got %s", check.show(s.norm))
    end
    s.position = default(c.position, llama and "rope" or "learned")
    if s.position ~= "learned" and s.position ~= "rope" then
        check.fail("transformer: position must be 'learned' or 'rope', got %s",
            check.show(s.position))
    end
    int("max_positions", s.seq)
    s.squared_relu = boolean(default(c.squared_relu, false), "squared_relu")
    -- Megatron's --cross-entropy-loss-fusion with its --cross-entropy-
    -- fusion-impl, native or te (models/roofline.lua M.head); false: unfused
    s.ce_fusion = default(c.ce_fusion, false)
    if s.ce_fusion ~= false and s.ce_fusion ~= "native" and s.ce_fusion ~= "te" then
        check.fail("transformer: ce_fusion must be false, 'native' or 'te', got %s",
            check.show(s.ce_fusion))
    end
    if s.squared_relu and s.swiglu then
        check.fail("transformer: squared_relu and swiglu are both set (one MLP activation)")
    end
    normalize_fp8(c, s)
    mla.normalize(c, s)
    moe.normalize(c, s)
    s.mtp_layers = check.int(default(c.mtp_layers, 0), "transformer", "mtp_layers", 0, core.max_layers)
    s.name = c.name
    return s
end
M.normalize = normalize

-- Parameters of one norm: LayerNorm has a weight and a bias, RMSNorm only a
-- weight (Zhang & Sennrich 2019, "Root Mean Square Layer Normalization").
local function norm_params(s)
    return s.norm == "layernorm" and 2 * s.hidden or s.hidden
end

-- Parameters of one block. GPT: 12h^2 + 13h (Narayanan et al. 2021,
-- "Efficient Large-Scale Language Model Training on GPU Clusters Using
-- Megatron-LM", Sec. 5.1 parameter count). General form, with q = heads *
-- head_dim and kv = kv_heads * head_dim (GQA: Ainslie et al. 2023):
--   attention  h*q (Q) + 2*h*kv (K, V) + q*h (output), biases q + 2kv + h
--   MLP        GeLU: 2*h*f, biases f + h;  SwiGLU: 3*h*f (gate, up, down),
--              biases 2f + h (Shazeer 2020, "GLU Variants Improve Transformer")
--   two norms
function M.block_params(s)
    local h, f = s.hidden, s.ffn_hidden
    local q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    local p = h * q + 2 * h * kv + q * h
    if s.bias then p = p + q + 2 * kv + h end
    if s.swiglu then
        p = p + 3 * h * f
        if s.bias then p = p + 2 * f + h end
    else
        p = p + 2 * h * f
        if s.bias then p = p + f + h end
    end
    return p + 2 * norm_params(s)
end

-- Forward FLOPs of one block per microbatch, counting a multiply-add as 2
-- FLOPs and only the matmuls. GPT: 24*b*s*h^2 + 4*b*s^2*h (Narayanan et al.
-- 2021, Sec. 5.1: 72*B*s*l*h^2*(1 + s/6h) per iteration is 3x the forward
-- of l layers). The s^2 term counts the full score matrix, not the causal
-- half, as that paper does. General form:
--   QKV projection  2*b*s*h*(q + 2*kv)      (GQA shrinks K and V)
--   output proj     2*b*s*q*h
--   scores + values 4*b*s^2*q               (2*b*s^2*q each)
--   MLP             GeLU 4*b*s*h*f; SwiGLU 6*b*s*h*f (three matmuls)
function M.block_fwd_flops(s)
    local b, n, h, f = s.microbatch, s.seq, s.hidden, s.ffn_hidden
    local q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    local fl = 2 * b * n * h * (q + 2 * kv) + 2 * b * n * q * h + 4 * b * n * n * q
    if s.swiglu then
        fl = fl + 6 * b * n * h * f
    else
        fl = fl + 4 * b * n * h * f
    end
    return fl
end

-- Activation bytes one block keeps from its forward until its backward, no
-- recomputation, no tensor or sequence parallelism. Korthikanti et al. 2022,
-- "Reducing Activation Recomputation in Large Transformer Models", Sec. 4.1:
-- s*b*h*(34 + 5*a*s/h) for 16-bit GPT blocks, itemised there as
--   attention  11sbh + 5as^2b: QKV input 2sbh, Q and K 4sbh, softmax output
--              2as^2b, its dropout mask as^2b, dropout output 2as^2b, V 2sbh,
--              output-projection input 2sbh, dropout mask sbh
--   MLP        19sbh: input 2sbh, GeLU input 8sbh, GeLU output 8sbh, mask sbh
--   norms      4sbh (inputs of the two layernorms)
-- Here every 16-bit tensor is e bytes (dtype) and masks are 1 byte, so
-- fp32 scales the tensors but not the masks. Variants, same accounting:
--   GQA        K and V are s*b*kv instead of s*b*h
--   no dropout no masks; the softmax output is the only s^2 tensor (e*as^2b)
--   SwiGLU     gate, up and their product (input to down proj): 3*e*sbf
--   flash_attention  no s^2 tensors; the kernel keeps fp32 row statistics
--              (4*a*s*b bytes) and recomputes the scores (Dao et al. 2022,
--              "FlashAttention"), as selective recomputation does in
--              Korthikanti et al. Sec. 4.2
function M.block_act_bytes(s)
    local e, b, n, h, f = DTYPE_BYTES[s.dtype], s.microbatch, s.seq, s.hidden, s.ffn_hidden
    local a = s.heads
    local q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    local mask = s.dropout and 1 or 0
    local sb = n * b
    local bytes = 2 * e * sb * h                 -- inputs of the two norms
        + e * sb * h                             -- QKV projection input
        + e * sb * (q + kv)                      -- Q and K for the scores
        + e * sb * kv                            -- V for the weighted sum
        + e * sb * q                             -- output projection input
        + mask * sb * h                          -- attention output dropout
        + e * sb * h                             -- MLP input
        + (s.swiglu and 3 or 2) * e * sb * f     -- MLP intermediates
        + mask * sb * h                          -- MLP output dropout
    -- FP8: TE saves the GEMM inputs in FP8 (models/fp8.lua act_delta)
    local dr, ds = fp8.act_delta(s)
    bytes = bytes + (dr + ds) * sb
    if s.flash_attention then
        bytes = bytes + 4 * a * sb
    elseif s.dropout then
        bytes = bytes + (2 * e + 1) * a * n * sb -- softmax out, mask, dropout out
    else
        bytes = bytes + e * a * n * sb           -- softmax out
    end
    return bytes
end

-- Bytes sent between stages per microbatch: one s x b x h tensor (Narayanan
-- et al. 2021, Sec. 3.2: point-to-point volume b*s*h per microbatch).
function M.boundary_bytes(s)
    return DTYPE_BYTES[s.dtype] * s.seq * s.microbatch * s.hidden
end

-- Embedding: V*h token table (+ max_positions*h for learned positions, the
-- (V + s) term of Narayanan et al.'s parameter count). A lookup, so its
-- FLOPs are negligible and counted as 0. Keeps only the dropout mask.
local function embedding(s)
    local h = s.hidden
    local params = s.vocab * h
    if s.position == "learned" then params = params + s.max_positions * h end
    return {
        name = "embedding", kind = "embedding",
        fwd_flops = 0,
        params = params,
        act_bytes = (s.dropout and 1 or 0) * s.seq * s.microbatch * h,
        out_bytes = M.boundary_bytes(s),
    }
end

-- Output head with the loss: final norm + V x h projection, forward FLOPs
-- 2*b*s*h*V (Narayanan et al. 2021, Sec. 5.1, the 6*B*s*h*V logit term of
-- the per-iteration count is fwd + bwd). Activations after Korthikanti et
-- al. 2022, Sec. 4.3: final norm input and projection input (2*e*sbh) and
-- the logits kept in fp32 for the cross-entropy (4*sbV). With tied = true
-- the projection reuses the embedding table: the last stage still holds a
-- copy (Megatron-LM keeps one on each end and all-reduces its gradient),
-- so params counts it and shared_params says how much is a copy.
local function head(s)
    local h, V = s.hidden, s.vocab
    local e, sb = DTYPE_BYTES[s.dtype], s.seq * s.microbatch
    return {
        name = "head", kind = "head",
        fwd_flops = 2 * sb * h * V,
        params = V * h + norm_params(s),
        shared_params = s.tied and V * h or nil,
        act_bytes = 2 * e * sb * h + 4 * sb * V,
        out_bytes = 0,
    }
end

-- The layer list for ps.run: embedding, "block 0" .. "block L-1", head.
-- Every layer carries `shape` (the normalized shape, shared): ps.run then
-- times it with the roofline (models/roofline.lua) when the cluster's
-- device has roofline constants, and splits it for tensor parallelism
-- (parallel.lua); fwd_flops and the other figures are for tp = 1.
function M.build(c)
    local s = normalize(c)
    local layers = { embedding(s) }
    layers[1].shape = s
    if s.experts or s.multi_latent_attention or s.mtp_layers > 0 then
        -- MoE, MLA or MTP blocks, then the head and the MTP heads
        -- (models/moe.lua)
        moe.add_blocks(s, layers, M.boundary_bytes(s))
        layers[#layers + 1] = head(s)
        layers[#layers].shape = s
        for i = 0, s.mtp_layers - 1 do
            local l = head(s)
            l.name, l.shared_params, l.mtp = "mtp " .. i .. " head", s.vocab * s.hidden, true
            l.shape = s
            layers[#layers + 1] = l
        end
        return layers, s
    end
    local fwd, params = M.block_fwd_flops(s), M.block_params(s)
    local act, out = M.block_act_bytes(s), M.boundary_bytes(s)
    -- blocks kept in BF16 at the ends of an FP8 model take a shape of
    -- their own (fp8 = false)
    local s16, act16
    if s.fp8 and s.fp8_bf16_first + s.fp8_bf16_last > 0 then
        s16 = {}
        for k, v in pairs(s) do s16[k] = v end
        s16.fp8 = false
        act16 = M.block_act_bytes(s16)
    end
    for i = 0, s.layers - 1 do
        local bf16 = s16 and (i < s.fp8_bf16_first or i >= s.layers - s.fp8_bf16_last)
        layers[#layers + 1] = {
            name = "block " .. i, kind = "block",
            fwd_flops = fwd, params = params, act_bytes = bf16 and act16 or act, out_bytes = out,
            shape = bf16 and s16 or s,
        }
    end
    layers[#layers + 1] = head(s)
    layers[#layers].shape = s
    return layers, s
end

M.DTYPE_BYTES = DTYPE_BYTES

return M
