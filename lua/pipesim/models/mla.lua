-- Multi-latent attention (DeepSeek-AI 2024, "DeepSeek-V2", Sec. 2.1;
-- DeepSeek-V3 report Sec. 2.1.1) as Megatron-Core runs it (megatron/core/
-- transformer/multi_latent_attention.py, MLASelfAttention): queries and
-- keys/values go through low-rank latents, the rotary part of the key is
-- one head shared by all heads. Its parameters, forward FLOPs, kept
-- activations, KV cache and its per-rank compute on the roofline. Pure
-- functions of a normalized shape (models/transformer.lua).
local check = require "pipesim.argcheck"

local M = {}

M.FIELDS = { multi_latent_attention = true, q_lora_rank = true, kv_lora_rank = true,
             qk_head_dim = true, qk_pos_emb_head_dim = true, v_head_dim = true }

-- Megatron's defaults for the MLA sizes (arguments.py, as of the flag
-- table in models/megatron_flags.lua): q_lora_rank None (a full-rank
-- query projection), kv_lora_rank 32, qk_head_dim 128,
-- qk_pos_emb_head_dim 64, v_head_dim 128.
local DEFAULTS = { kv_lora_rank = 32, qk_head_dim = 128, qk_pos_emb_head_dim = 64,
                   v_head_dim = 128 }

-- Fills s.multi_latent_attention (boolean) and, with it, the five sizes;
-- without it an MLA size is an error (it would change nothing). The
-- normalized fields are the input's names, so normalizing twice is
-- harmless.
function M.normalize(c, s)
    local on = c.multi_latent_attention
    if on == nil then on = false end
    s.multi_latent_attention = check.bool(on, "transformer: multi_latent_attention")
    if not on then
        for k in pairs(M.FIELDS) do
            if k ~= "multi_latent_attention" and c[k] ~= nil then
                check.fail("transformer: field '%s' needs multi_latent_attention = true", k)
            end
        end
        return
    end
    for k, d in pairs(DEFAULTS) do
        s[k] = check.int(c[k] == nil and d or c[k], "transformer", k, 1, 1 << 53)
    end
    if c.q_lora_rank ~= nil then
        s.q_lora_rank = check.int(c.q_lora_rank, "transformer", "q_lora_rank", 1, 1 << 53)
    end
end

-- Output widths of the projections: the query (and the key) of one head is
-- qk_head_dim + qk_pos_emb_head_dim wide (its no-rope and rope parts).
local function widths(s)
    local H = s.heads
    local dq = s.qk_head_dim + s.qk_pos_emb_head_dim
    return H * dq, H * (s.qk_head_dim + s.v_head_dim), H * s.v_head_dim, dq
end

-- The linear layers of one MLA block: { name, k (input), n (output),
-- split (column- or row-parallel under TP: true; replicated: false) }.
-- Megatron: the down projections are replicated on the TP ranks
-- (parallel_mode "duplicated"), the up projections column-parallel, the
-- output projection row-parallel.
function M.linears(s)
    local h = s.hidden
    local qw, kvw, vw = widths(s)
    local l = {}
    if s.q_lora_rank then
        l[#l + 1] = { name = "q down", k = h, n = s.q_lora_rank, split = false }
        l[#l + 1] = { name = "q up", k = s.q_lora_rank, n = qw, split = true }
    else
        l[#l + 1] = { name = "q", k = h, n = qw, split = true }
    end
    l[#l + 1] = { name = "kv down", k = h, n = s.kv_lora_rank + s.qk_pos_emb_head_dim, split = false }
    l[#l + 1] = { name = "kv up", k = s.kv_lora_rank, n = kvw, split = true }
    l[#l + 1] = { name = "proj", k = vw, n = h, split = true, row = true }
    return l
end

-- Parameters of the attention (not the block's two norms): the linear
-- layers (with biases when the shape has them) and the two latent norms
-- (q's only with a q_lora_rank).
function M.params(s)
    local p = 0
    for _, l in ipairs(M.linears(s)) do
        p = p + l.k * l.n + (s.bias and l.n or 0)
    end
    local per = s.norm == "layernorm" and 2 or 1
    p = p + per * s.kv_lora_rank
    if s.q_lora_rank then p = p + per * s.q_lora_rank end
    return p
end

-- Forward FLOPs of the attention per microbatch: 2*T*k*n per linear layer,
-- the scores 2*b*s^2*H*(qk_head_dim + qk_pos_emb_head_dim) and the
-- weighted values 2*b*s^2*H*v_head_dim (the full s^2, not the causal
-- half, as models/transformer.lua counts dense attention).
function M.fwd_flops(s)
    local b, n = s.microbatch, s.seq
    local T = b * n
    local fl = 0
    for _, l in ipairs(M.linears(s)) do fl = fl + 2 * T * l.k * l.n end
    local _, _, vw, dq = widths(s)
    return fl + 2 * b * n * n * s.heads * dq + 2 * b * n * n * vw
end

-- Activation bytes the attention keeps for its backward per microbatch,
-- itemised as models/transformer.lua's dense attention (e-byte tensors,
-- 1-byte dropout masks), not the block's norms or its MLP:
--   down projections' input (the norm output)   e*T*h
--   q latent: its norm's input, q up's input    2e*T*q_lora_rank
--   kv latent: its norm's input, kv up's input  2e*T*kv_lora_rank
--   Q and K for the scores (K's rope part expanded to every head, as
--   Megatron's MLA does before the core attention)  2e*T*H*dq
--   V, and the output projection's input         2e*T*H*v_head_dim
--   the attention output's dropout mask          T*h (with dropout)
--   the core: flash attention's fp32 row statistics 4*H*T, or the s^2
--   tensors of unfused attention
-- t, sp: tensor parallelism (the per-head tensors split t ways) and
-- sequence parallelism.
function M.act_bytes(s, e, t, sp)
    t = t or 1
    local r = sp and t or 1
    local b, n, h, H = s.microbatch, s.seq, s.hidden, s.heads
    local T = b * n
    local _, _, vw, dq = widths(s)
    local mask = s.dropout and 1 or 0
    local latents = 2 * e * T * s.kv_lora_rank
    if s.q_lora_rank then latents = latents + 2 * e * T * s.q_lora_rank end
    local split = 2 * e * T * H * dq + 2 * e * T * vw
    local core
    if s.flash_attention then
        core = 4 * H * T
    else
        core = (s.dropout and (2 * e + 1) or e) * H * n * T
    end
    -- the latents are replicated on the TP ranks (so are the down
    -- projections); the norm output and the mask are split by SP
    return (e + mask) * T * h / r + latents + (split + core) / t
end

-- KV cache bytes per token per layer: the compressed latent and the shared
-- rope key, (kv_lora_rank + qk_pos_emb_head_dim) elements (DeepSeek-V2
-- Sec. 2.1.2, Table 1: (d_c + d_h^R) l per token), against 2*H*d_h for
-- multi-head attention.
function M.kv_cache_bytes(s, e)
    return e * (s.kv_lora_rank + s.qk_pos_emb_head_dim)
end

-- The proxy shape whose dense attention core has MLA's: heads H, head_dim
-- the mean of the query/key and value widths, so the core's FLOPs
-- 4*b*s^2*H*d = 2*b*s^2*H*(dq + dv) and flash attention's Q, K, V, O bytes
-- T*H*(2*dq + 2*dv) equal MLA's exactly (models/roofline.lua M.block).
function M.core_shape(s)
    local _, _, _, dq = widths(s)
    local p = {}
    for k, v in pairs(s) do p[k] = v end
    p.kv_heads, p.head_dim = s.heads, (dq + s.v_head_dim) / 2
    p.multi_latent_attention = false
    return p
end

return M
