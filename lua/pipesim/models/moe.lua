-- Mixture-of-experts blocks: the shape's MoE fields, a MoE (or MLA) block's
-- parameters, FLOPs and kept activations for the layer list, and
-- M.block_cost, what one block costs on one rank of an expert-parallel
-- group (the contract with the expert-parallel lowering: MOE_INTERFACE.md,
-- docs/moe.md). Megatron-Core's MoE layer (megatron/core/transformer/moe/,
-- Megatron-LM 00611e6) is the reference: a router (a GEMM, a softmax or
-- sigmoid score, top-k), the tokens permuted by expert, dispatched, run
-- through the local experts' MLPs, combined and unpermuted, beside
-- optional shared experts.
local check = require "pipesim.argcheck"
local mla = require "pipesim.models.mla"
-- the roofline (and clusters.lua behind it) loads on first use: ps.models
-- alone does not need it (tests/lua/test_startup.lua)
local roofline = setmetatable({}, { __index = function(_, k)
    return require("pipesim.models.roofline")[k]
end })

local M = {}

-- models/transformer.lua and parallel.lua load this module's users; they
-- are required on first use so that neither load order is a circle
local function transformer() return require "pipesim.models.transformer" end
local function parallel() return require "pipesim.parallel" end

M.FIELDS = {
    experts = true, topk = true, expert_ffn = true, shared_ffn = true, shared_experts = true,
    moe_layers = true, router_score = true, capacity_factor = true, pad_to_capacity = true,
    grouped_gemm = true, permute_fusion = true, dispatch_dtype = true,
    combine_grad_dtype = true, router_groups = true, router_group_topk = true,
}

local BIG = 1 << 53
local A2A_DTYPES = { bf16 = true, fp8 = true }

local function opt(c, k, d)
    if c[k] == nil then return d end
    return c[k]
end

local function flag(c, k, d) return check.bool(opt(c, k, d), "transformer: " .. k) end

local function choice(c, k, set, d)
    local v = opt(c, k, d)
    if not set[v] then
        check.fail("transformer: %s must be one of %s, got %s", k, check.keys(set), check.show(v))
    end
    return v
end

-- moe_layers as Megatron's --moe-layer-freq takes it: an integer N (block
-- i, from 0, is MoE when i % N == 0: megatron/core/transformer/moe/
-- moe_utils.py / transformer_config.py moe_layer_freq) or a list of 0/1,
-- one per block. Returns the 0/1 list (the normalized field: a list, so
-- that normalizing a normalized shape again is harmless).
local function layer_pattern(v, L)
    local p = {}
    if math.type(v) == "integer" or (type(v) == "number" and math.tointeger(v)) then
        local n = check.int(v, "transformer", "moe_layers", 1, L)
        for i = 0, L - 1 do p[i + 1] = (i % n == 0) and 1 or 0 end
        return p
    end
    if type(v) ~= "table" then
        check.fail("transformer: moe_layers must be an integer (every N-th block) or a list " ..
            "of 0/1 per block, got %s", check.show(v))
    end
    if #v ~= L then
        check.fail("transformer: moe_layers has %d entries, the model has %d blocks", #v, L)
    end
    for i = 1, L do
        if v[i] ~= 0 and v[i] ~= 1 then
            check.fail("transformer: moe_layers[%d] must be 0 or 1, got %s", i, check.show(v[i]))
        end
        p[i] = v[i]
    end
    return p
end

-- Fills the shape's MoE fields from c (the user's table); s.experts nil
-- for a dense model, where any MoE field is an error (it would change
-- nothing). Defaults: Megatron's (top-k 2, --moe-ffn-hidden-size =
-- ffn_hidden, softmax score, no capacity factor, BF16 all-to-alls) but
-- grouped_gemm, which pipesim takes on (every published MoE recipe runs
-- TE's grouped GEMM; Megatron's flag is off by default and
-- ps.models.megatron follows the flag).
function M.normalize(c, s)
    if c.experts == nil then
        for k in pairs(M.FIELDS) do
            if c[k] ~= nil then check.fail("transformer: field '%s' needs experts", k) end
        end
        return
    end
    local E = check.int(c.experts, "transformer", "experts", 1, BIG)
    s.experts = E
    s.topk = check.int(opt(c, "topk", 2), "transformer", "topk", 1, BIG)
    if s.topk > E then
        check.fail("transformer: topk (%d) is larger than experts (%d)", s.topk, E)
    end
    s.expert_ffn = check.int(opt(c, "expert_ffn", s.ffn_hidden), "transformer", "expert_ffn", 1, BIG)
    s.shared_experts = check.int(opt(c, "shared_experts", 0), "transformer", "shared_experts", 0, BIG)
    local shared = c.shared_ffn
    if shared == nil then shared = s.shared_experts * s.expert_ffn end
    s.shared_ffn = check.int(shared, "transformer", "shared_ffn", 0, BIG)
    if c.shared_ffn ~= nil and s.shared_experts > 0 and s.shared_ffn % s.shared_experts ~= 0 then
        check.fail("transformer: shared_ffn (%d) is not a multiple of shared_experts (%d)",
            s.shared_ffn, s.shared_experts)
    end
    s.moe_layers = layer_pattern(opt(c, "moe_layers", 1), s.layers)
    s.router_score = choice(c, "router_score", { softmax = true, sigmoid = true }, "softmax")
    if c.capacity_factor ~= nil then
        local f = c.capacity_factor
        if type(f) ~= "number" or f ~= f or f <= 0 or f == math.huge then
            check.fail("transformer: capacity_factor must be a number > 0, got %s", check.show(f))
        end
        s.capacity_factor = f
    end
    s.pad_to_capacity = flag(c, "pad_to_capacity", false)
    if s.pad_to_capacity and not s.capacity_factor then
        -- Megatron: "moe_expert_capacity_factor must be set to use
        -- moe_pad_expert_input_to_capacity" (transformer_config.py)
        check.fail("transformer: pad_to_capacity needs capacity_factor")
    end
    s.grouped_gemm = flag(c, "grouped_gemm", true)
    s.permute_fusion = flag(c, "permute_fusion", false)
    s.dispatch_dtype = choice(c, "dispatch_dtype", A2A_DTYPES, "bf16")
    s.combine_grad_dtype = choice(c, "combine_grad_dtype", A2A_DTYPES, "bf16")
    if c.router_groups ~= nil or c.router_group_topk ~= nil then
        local g = check.int(opt(c, "router_groups", 1), "transformer", "router_groups", 1, E)
        local gk = check.int(opt(c, "router_group_topk", g), "transformer", "router_group_topk", 1, g)
        if E % g ~= 0 then
            check.fail("transformer: experts (%d) is not a multiple of router_groups (%d)", E, g)
        end
        if s.topk > gk * (E // g) then
            check.fail("transformer: topk (%d) is more than the %d experts of router_group_topk " ..
                "(%d) groups", s.topk, gk * (E // g), gk)
        end
        s.router_groups, s.router_group_topk = g, gk
    end
end

-- Is block i (from 0) of shape s a MoE block?
function M.is_moe(s, i)
    return s.experts ~= nil and s.moe_layers[i + 1] == 1
end

-- A dense MLP of intermediate size f: parameters (SwiGLU 3hf, GeLU or
-- squared ReLU 2hf, with biases 2f + h or f + h) and forward FLOPs per
-- token (2 per multiply-add of each matmul).
local function mlp_params(s, f)
    if f == 0 then return 0 end
    local h = s.hidden
    local p = (s.swiglu and 3 or 2) * h * f
    if s.bias then p = p + (s.swiglu and 2 * f or f) + h end
    return p
end
local function mlp_flops(s, f) return (s.swiglu and 6 or 4) * s.hidden * f end
-- kept intermediates per token: SwiGLU's gate, up and product, GeLU's
-- input and output (models/transformer.lua)
local function mlp_act(s, e, f) return (s.swiglu and 3 or 2) * e * f end
M.mlp_params = mlp_params

-- The attention half of a block (its two norms included): parameters,
-- forward FLOPs and kept bytes, dense attention from models/transformer.lua
-- less its MLP, or multi-latent attention (models/mla.lua).
local function attention(s)
    local tr = transformer()
    local e = tr.DTYPE_BYTES[s.dtype]
    local T = s.seq * s.microbatch
    if s.multi_latent_attention then
        local norms = 2 * (s.norm == "layernorm" and 2 or 1) * s.hidden
        local mask = s.dropout and 1 or 0
        -- the block's norm inputs and MLP input, the MLP output's mask
        local rest = 3 * e * T * s.hidden + mask * T * s.hidden
        return mla.params(s) + norms, mla.fwd_flops(s), mla.act_bytes(s, e) + rest
    end
    return tr.block_params(s) - mlp_params(s, s.ffn_hidden),
        tr.block_fwd_flops(s) - T * mlp_flops(s, s.ffn_hidden),
        tr.block_act_bytes(s) - T * mlp_act(s, e, s.ffn_hidden)
end

-- Routed token copies of one microbatch of T tokens: T*topk under even
-- routing; with a capacity factor each expert takes at most
-- ceil(T*topk/E * factor) (Megatron's get_capacity(num_tokens * topk,
-- num_experts, capacity_factor), moe_utils.py), and pad_to_capacity fills
-- every expert to it.
function M.routed_tokens(s, T)
    local routed = T * s.topk
    if not s.capacity_factor then return routed, nil end
    local cap = math.ceil(routed / s.experts * s.capacity_factor)
    if s.pad_to_capacity then return s.experts * cap, cap end
    return math.min(routed, s.experts * cap), cap
end

-- A block's figures for the layer list (one microbatch, no parallelism):
-- params, active_params (what one token runs through: the router, top-k
-- routed experts, the shared experts), fwd_flops and act_bytes. moe: the
-- block's MLP is the MoE layer (else the dense ffn_hidden MLP).
--   router      params h*E (+E bias), FLOPs 2*T*h*E, keeps its fp32 scores
--               4*T*E for the backward
--   experts     E MLPs of expert_ffn; FLOPs and intermediates at the
--               routed token copies (T*topk, M.routed_tokens); each copy
--               also keeps its permuted input and its output (the input of
--               unpermute's probability product): 2e*h per copy
--   shared      one dense MLP of shared_ffn on every token
function M.block_figures(s, moe)
    local ap, af, aa = attention(s)
    local e = transformer().DTYPE_BYTES[s.dtype]
    local T = s.seq * s.microbatch
    if not moe then
        local mp = mlp_params(s, s.ffn_hidden)
        return { params = ap + mp, active_params = ap + mp,
                 fwd_flops = af + T * mlp_flops(s, s.ffn_hidden),
                 act_bytes = aa + T * mlp_act(s, e, s.ffn_hidden) }
    end
    local E, h = s.experts, s.hidden
    local router = h * E + (s.bias and E or 0)
    local ex, sh = mlp_params(s, s.expert_ffn), mlp_params(s, s.shared_ffn)
    local routed = M.routed_tokens(s, T)
    return {
        params = ap + router + E * ex + sh,
        active_params = ap + router + s.topk * ex + sh,
        fwd_flops = af + 2 * T * h * E + routed * mlp_flops(s, s.expert_ffn)
            + T * mlp_flops(s, s.shared_ffn),
        act_bytes = aa + 4 * T * E + routed * (2 * e * h + mlp_act(s, e, s.expert_ffn))
            + T * mlp_act(s, e, s.shared_ffn),
    }
end

-- ===================================================================
-- block_cost: one block on one rank of an expert-parallel group
-- ===================================================================

-- Parts of models/roofline.lua's block that are its MLP (the MoE layer
-- replaces them), and those MLA replaces (its own projections and RoPE).
local MLP_PARTS = { "gate", "up", "swiglu", "down", "fc1", "fc2", "bias-gelu", "squared relu" }
local MLA_PARTS = { "qkv", "proj", "rope" }
-- the attention core's parts, whose cost grows with the whole sequence
local CORE_PARTS = {}
for _, n in ipairs { "flash attention", "flash attention bwd", "scores", "scores dQ dK", "softmax",
                     "softmax bwd", "attention dropout", "attention dropout bwd", "context",
                     "context dP dV", "selective recompute" } do
    CORE_PARTS[n] = true
end

local function starts(name, list)
    for _, p in ipairs(list) do
        if name == p or name:sub(1, #p + 1) == p .. " " then return true end
    end
    return false
end

local function add3(a, f, b, w)
    a.f, a.b, a.w = a.f + f, a.b + b, a.w + w
end

-- A linear layer X[m x k] W[k x n] on the roofline: forward, data
-- gradient (B) and weight gradient (W), each one GEMM (DESIGN.md), batch
-- of them in one kernel (a grouped GEMM), or `loop` kernels one after the
-- other (Megatron's SequentialMLP without --moe-grouped-gemm).
local function linear(acc, dev, m, n, k, batch, loop, gk, wk)
    local g = roofline.gemm_time
    local reps = loop and batch or 1
    local bb = loop and 1 or batch
    add3(acc, reps * g(dev, m, n, k, bb, nil, gk), reps * g(dev, m, k, n, bb, nil, gk),
        reps * g(dev, k, n, m, bb, nil, wk))
end

-- A memory-bound kernel of `elems` elements moving fwd_per bytes each
-- forward and bwd_per backward (B).
local function memop(acc, dev, elems, fwd_per, bwd_per)
    add3(acc, roofline.mem_time(dev, elems * fwd_per), roofline.mem_time(dev, elems * bwd_per), 0)
end

-- The attention half on one TP rank: models/roofline.lua's block less its
-- MLP (norms, residuals and bias-dropout-adds of both halves stay), with
-- T = microbatch x seq / cp tokens and the core's parts times cp (each CP
-- rank's queries meet the whole sequence's keys). MLA: the proxy core
-- (models/mla.lua core_shape), the dense projections and RoPE replaced by
-- MLA's (down projections replicated on the TP ranks, up projections and
-- the output projection split), its latent norms and the RoPE of the
-- query's and the shared key's rope parts.
local function attention_time(s, dev, o)
    local t, cp = o.tp, o.cp
    local sc = s.multi_latent_attention and mla.core_shape(s) or s
    local c = {}
    for k, v in pairs(sc) do c[k] = v end
    c.seq = s.seq // cp
    local rf = roofline.block(c, dev, { tp = t, sp = o.sp, selective = o.selective })
    local acc = { f = 0, b = 0, w = 0 }
    for _, p in ipairs(rf.parts) do
        local skip = starts(p.name, MLP_PARTS)
            or (s.multi_latent_attention and starts(p.name, MLA_PARTS))
        if not skip then
            local x = CORE_PARTS[p.name] and cp * p.time or p.time
            if p.pass == "F" then acc.f = acc.f + x
            elseif p.pass == "B" then acc.b = acc.b + x
            else acc.w = acc.w + x end
        end
    end
    if s.multi_latent_attention then
        local T = s.microbatch * c.seq
        local e = roofline.DTYPE_BYTES[s.dtype]
        for _, l in ipairs(mla.linears(s)) do
            local n, k = l.n, l.k
            if l.split and l.row then k = k / t elseif l.split then n = n / t end
            linear(acc, dev, T, n, k, 1, false)
        end
        -- norms (read x, write y; backward read x, dy, write dx) and RoPE
        -- (read, write each way), models/roofline.lua's per-element bytes
        memop(acc, dev, T * (s.kv_lora_rank + (s.q_lora_rank or 0)), 2 * e, 3 * e)
        memop(acc, dev, T * s.qk_pos_emb_head_dim * (s.heads / t + 1), 2 * e, 2 * e)
    end
    return acc
end

-- A dense MLP of intermediate f on T tokens, split t ways (Megatron's
-- shared experts run as a column- then row-parallel MLP on the attention
-- side's TP group): fc1 (both SwiGLU halves), the activation (models/
-- roofline.lua's bytes: SwiGLU 3e forward 5e backward, GeLU 2e and 3e),
-- fc2. batch experts of m tokens each in one grouped kernel, or a loop.
-- Under FP8 (fq, models/fp8.lua's plan) the GEMMs run at the FP8 rate and,
-- as models/roofline.lua's dense linears, each quantises its input before
-- the forward and its output gradient before the backward (TE's
-- GroupedLinear quantises every expert's slice: transformer_engine/
-- pytorch/module/grouped_linear.py, the inputs split per GEMM and cast),
-- a memory-bound kernel of fq.quant bytes an element; fc1's input is the
-- local shard of rin (sequence parallel: t) when TE's FP8 all-gather
-- follows.
local function mlp_time(s, dev, m, f, batch, loop, fq, rin)
    local acc = { f = 0, b = 0, w = 0 }
    if f == 0 or m == 0 then return acc end
    local gk = fq and fq.gemm or nil
    local wk = fq and not fq.wgrad_bf16 and gk or nil
    local e = roofline.DTYPE_BYTES[s.dtype]
    local h, g = s.hidden, (s.swiglu and 2 or 1) * f
    if fq then
        -- fc1's input and fc2's (forward), fc2's output gradient and fc1's
        -- (backward), at models/roofline.lua's 3 vector FLOPs an element
        local qf, qb = batch * m * (h / (rin or 1) + f), batch * m * (h / (rin or 1) + g)
        add3(acc, roofline.mem_time(dev, qf * fq.quant, 3 * qf),
            roofline.mem_time(dev, qb * fq.quant, 3 * qb), 0)
    end
    linear(acc, dev, m, g, h, batch, loop, gk, wk)
    if s.swiglu then memop(acc, dev, batch * m * f, 3 * e, 5 * e)
    else memop(acc, dev, batch * m * f, 2 * e, 3 * e) end
    linear(acc, dev, m, h, f, batch, loop, gk, wk)
    return acc
end

-- Bytes per element of an all-to-all payload: BF16 is e; FP8 (DeepEP's
-- low-precision dispatch, DeepSeek-V3 Sec. 3.3.2) one byte plus one fp32
-- scale per 128 channels.
local function a2a_bytes(dtype, e)
    if dtype == "fp8" then return 1 + 4 / 128 end
    return e
end

local function check_par(s, par)
    if type(par) ~= "table" then check.fail("moe.block_cost: par must be a table, got %s", type(par)) end
    local dev = par.device
    if type(dev) ~= "table" or not dev.hbm_bandwidth then
        check.fail("moe.block_cost: par.device must be a device with roofline constants " ..
            "(ps.clusters.device), got %s", check.show(dev))
    end
    local o = { device = dev, selective = par.selective, modules = par.modules, mtp = par.mtp }
    for _, k in ipairs { "tp", "ep", "cp" } do
        o[k] = check.int(par[k] == nil and 1 or par[k], "moe.block_cost", k, 1, BIG)
    end
    o.etp = check.int(par.etp == nil and o.tp or par.etp, "moe.block_cost", "etp", 1, BIG)
    o.sp = par.sp and o.tp > 1 or false
    local imb = par.imbalance == nil and 1 or par.imbalance
    if type(imb) ~= "number" or imb ~= imb or imb < 1 or imb == math.huge then
        check.fail("moe.block_cost: imbalance must be a number >= 1 (max over mean tokens per " ..
            "expert), got %s", check.show(imb))
    end
    o.imbalance = imb
    if s.experts then
        if s.experts % o.ep ~= 0 then
            check.fail("moe.block_cost: ep (%d) does not divide experts (%d)", o.ep, s.experts)
        end
        if o.tp > 1 and not o.sp then
            -- arguments.py: "When using MoE with tensor parallelism,
            -- sequence parallelism must be used"
            check.fail("moe.block_cost: a MoE block with tp = %d needs sp (Megatron: sequence " ..
                "parallelism must be used with MoE and tensor parallelism)", o.tp)
        end
    end
    if s.seq % o.cp ~= 0 then
        check.fail("moe.block_cost: cp (%d) does not divide seq (%d)", o.cp, s.seq)
    end
    return o
end

-- Megatron's output-discarding recompute of a block's modules
-- (--recompute-modules, lua/pipesim/recompute.lua; Megatron-Core 0.20,
-- d98e8a64dd, tensor_parallel CheckpointWithoutOutput): the bytes the
-- attention side no longer keeps and the forward work its backward runs
-- again, on one TP rank for T tokens (dev nil: the bytes only).
--   layernorm (transformer_layer.py): the outputs of input_layernorm and
--     pre_mlp_layernorm, e*T*h each (split by SP), recomputed from the
--     kept inputs: both norms' forward again (read x, write y: 2e an
--     element, as attention_time's norms)
--   mla_up_proj (multi_latent_attention.py qkv_up_proj_and_rope_apply):
--     Q and K (H*dq wide each) and V (H*v_head_dim), split by TP, are
--     discarded; the query projection (q up, or q without q_lora_rank) and
--     kv up GEMMs and the RoPE of the query's and the shared key's rope
--     parts run again
-- moe_act is the experts' (block_cost's expert branch).
local function discarded(s, o, dev, T, plain)
    local set = o.modules
    local drop, acc = 0, { f = 0, b = 0, w = 0 }
    if not set then return 0, 0 end
    local e = roofline.DTYPE_BYTES[s.dtype]
    local t = o.tp
    local r = o.sp and t or 1
    if set.layernorm then
        drop = drop + 2 * e * T * s.hidden / r
        if dev then memop(acc, dev, 2 * T * s.hidden / r, 2 * e, 0) end
    end
    if set.mlp and not s.experts and plain and s.ffn_hidden > 0 then
        -- mlp on a plain dense block (parallel.lua; block_cost counts its
        -- own): the MLP under tensor_parallel.checkpoint keeps its input
        -- in the 16-bit dtype and drops its intermediates, of which under
        -- FP8 TE kept fc2's input as its 1-byte copy and fc1's input
        -- (the norm's output) as one (models/fp8.lua act_delta)
        local f, xe = s.ffn_hidden, (s.fp8 and s.fp8_wgrad) and 1 or e
        drop = drop + T * (mlp_act(s, e, f) - (e - xe) * f) / t - T * (e - xe) * s.hidden / r
        if dev then
            local fq = s.fp8 and roofline.fp8.plan(s, dev) or nil
            local m = mlp_time(s, dev, T, f / t, 1, false, fq, r)
            acc.f = acc.f + m.f
        end
    end
    if set.mla_up_proj and s.multi_latent_attention then
        local H, dq = s.heads, s.qk_head_dim + s.qk_pos_emb_head_dim
        drop = drop + e * T * H * (2 * dq + s.v_head_dim) / t
        for _, l in ipairs(mla.linears(s)) do
            -- BF16 GEMMs, as attention_time runs MLA's projections
            if l.split and not l.row then linear(acc, dev, T, l.n / t, l.k, 1, false) end
        end
        memop(acc, dev, T * s.qk_pos_emb_head_dim * (H / t + 1), 2 * e, 0)
    end
    return drop, acc.f
end
M.discarded = discarded

-- Parameters of a dense MLP of intermediate f on one of t TP ranks
-- (column-parallel fc1 with its bias, row-parallel fc2 whose bias is
-- replicated), and of the attention half (its norms included) on one TP
-- rank (parallel.lua's block_params less the MLP; MLA: the split
-- projections / t, the replicated down projections and the norms whole).
local function mlp_rank_params(s, f, t)
    if f == 0 then return 0 end
    local h = s.hidden
    local split = (s.swiglu and 3 or 2) * h * f
    if s.bias then split = split + (s.swiglu and 2 or 1) * f end
    return split / t + (s.bias and h or 0)
end

local function attention_rank_params(s, t)
    if not s.multi_latent_attention then
        return parallel().block_params(s, t) - mlp_rank_params(s, s.ffn_hidden, t)
    end
    local per = s.norm == "layernorm" and 2 or 1
    local p = 2 * per * s.hidden + per * (s.kv_lora_rank + (s.q_lora_rank or 0))
    for _, l in ipairs(mla.linears(s)) do
        local w = l.k * l.n + (s.bias and l.n or 0)
        p = p + (l.split and w / t or w)
    end
    return p
end

-- Activation bytes the attention half keeps on one TP rank (its norms'
-- and the MLP's inputs and masks included), for T = the rank's sequence
-- chunk: parallel.lua's block_act_bytes less the MLP intermediates, or
-- MLA's (models/mla.lua) with the block's own tensors.
local function attention_rank_act(s, c, t, sp, selective)
    local e = roofline.DTYPE_BYTES[s.dtype]
    local T = c.seq * c.microbatch
    if not s.multi_latent_attention then
        return parallel().block_act_bytes(c, t, sp, selective) - T * mlp_act(s, e, s.ffn_hidden) / t
    end
    local r = sp and t or 1
    local mask = s.dropout and 1 or 0
    return (3 * e + mask) * T * s.hidden / r + mla.act_bytes(c, e, t, sp)
end

-- block_cost(shape, par) -> what one block costs one microbatch on the
-- most loaded rank of its expert-parallel group (MOE_INTERFACE.md; times
-- in seconds, bytes in bytes). shape: a normalized shape (a MoE block's,
-- or a dense one: then its MLP is reported as the shared part and the
-- expert figures are 0). par: { device (ps.clusters.device), tp, etp
-- (default tp, as Megatron's --expert-tensor-parallel-size), ep, cp, sp,
-- selective, imbalance (max over mean tokens per expert, >= 1), mtp (a
-- multi-token prediction block: its module's two norms and 2h -> h
-- projection, column-parallel as Megatron's eh_proj, join the attention
-- part) }. Besides the interface's figures: *_bwd_weight_time (the weight
-- gradients' share of each backward) and linear_params (the dense side's
-- linear weights per rank, those FP8 keeps copies of).
-- The token flow (Megatron's MoEAlltoAllTokenDispatcher, 00611e6): each
-- rank routes its Tr = b*s/(cp*tp) tokens (sequence parallel) to topk
-- experts; S = Tr*topk copies (M.routed_tokens: capacity drops or pads
-- them) are permuted by expert and sent over the EP group; the ETP group
-- gathers them, so each local expert sees m = ep*etp*S/E tokens on
-- average, m*imbalance on the loaded rank (at most ep*etp*capacity).
-- Bytes a rank sends to the other ep-1 ranks: dispatch S*h*d*(ep-1)/ep
-- with d the dispatch dtype's bytes (dispatch_dtype: BF16 by default as
-- Megatron's --moe-dispatch-fwd-dtype; FP8 as DeepSeek-V3 trains, 1 byte
-- and an fp32 scale per 128 channels), combine (the loaded rank's results
-- back, BF16) R*h*e*(ep-1)/ep with R its tokens; backward: the combine's
-- gradient goes the dispatch way at combine_grad_dtype
-- (dispatch_grad_bytes), the dispatch's the combine way
-- (combine_grad_bytes).
function M.block_cost(s, par)
    if type(s) ~= "table" or math.type(s.hidden) ~= "integer" then
        check.fail("moe.block_cost: shape must be a normalized shape (ps.models.shape or a " ..
            "layer's shape), got %s", check.show(s))
    end
    local o = check_par(s, par)
    local dev, t = o.device, o.tp
    local e = roofline.DTYPE_BYTES[s.dtype]
    local c = {}
    for k, v in pairs(s) do c[k] = v end
    c.seq = s.seq // o.cp
    local T = s.microbatch * c.seq
    local fq = s.fp8 and roofline.fp8.plan(s, dev) or nil
    local gk = fq and fq.gemm or nil
    local wk = fq and not fq.wgrad_bf16 and gk or nil
    local at = attention_time(s, dev, o)
    local r = {
        attn_fwd_time = at.f, attn_bwd_time = at.b + at.w, attn_bwd_weight_time = at.w,
        router_fwd_time = 0, router_bwd_time = 0, permute_fwd_time = 0, permute_bwd_time = 0,
        expert_fwd_time = 0, expert_bwd_time = 0, expert_bwd_weight_time = 0,
        dispatch_bytes = 0, combine_bytes = 0, dispatch_grad_bytes = 0, combine_grad_bytes = 0,
        expert_params = 0, tokens_per_expert = 0,
    }
    local dense = attention_rank_params(s, t)
    local act = attention_rank_act(s, c, t, o.sp, o.selective)
    -- modules Megatron discards and recomputes (discarded above): less
    -- kept, the forward again in the attention's backward
    local drop, again = discarded(s, o, dev, T)
    act = act - drop
    r.attn_bwd_time = r.attn_bwd_time + again
    r.recompute_time, r.recompute_dropped_bytes = again, drop
    local per = s.norm == "layernorm" and 2 or 1
    local h0 = s.hidden
    -- the attention's linear weights: all but its norms (and biases)
    local linear_w = dense - 2 * per * h0
    if s.multi_latent_attention then
        linear_w = linear_w - per * (s.kv_lora_rank + (s.q_lora_rank or 0))
    end
    if o.mtp then
        -- the MTP module's norms of the hidden state and the embedding,
        -- then eh_proj over their 2h concatenation
        local mt = { f = 0, b = 0, w = 0 }
        local r0 = o.sp and t or 1
        memop(mt, dev, 2 * T * h0 / r0, 2 * e, 3 * e)
        linear(mt, dev, T, h0 / t, 2 * h0, 1, false, gk, wk)
        r.attn_fwd_time = r.attn_fwd_time + mt.f
        r.attn_bwd_time = r.attn_bwd_time + mt.b + mt.w
        r.attn_bwd_weight_time = r.attn_bwd_weight_time + mt.w
        dense = dense + 2 * per * h0 + 2 * h0 * h0 / t
        linear_w = linear_w + 2 * h0 * h0 / t
        act = act + (2 * e * T * h0 + 2 * e * T * h0) / r0
    end
    local shared_f = s.experts and s.shared_ffn or s.ffn_hidden
    local sh = mlp_time(s, dev, T, shared_f / t, 1, false, fq, o.sp and t or 1)
    r.shared_fwd_time, r.shared_bwd_time, r.shared_bwd_weight_time = sh.f, sh.b + sh.w, sh.w
    dense = dense + mlp_rank_params(s, shared_f, t)
    linear_w = linear_w + (shared_f > 0 and (s.swiglu and 3 or 2) * h0 * shared_f / t or 0)
    local shared_act = T * mlp_act(s, e, shared_f) / t
    act = act + shared_act
    local set = o.modules or {}
    if shared_f > 0 and ((s.experts and set.shared_experts and not set.moe) or
                         (not s.experts and set.mlp)) then
        -- mlp (a dense block's MLP, transformer_layer.py: not a MoE
        -- layer's) or shared_experts (moe_layer.py: the shared experts),
        -- each under tensor_parallel.checkpoint (d98e8a64dd): their
        -- intermediates are not kept (their input is: the router and the
        -- attention side keep it), their forward runs again in the backward
        act = act - shared_act
        r.shared_bwd_time = r.shared_bwd_time + sh.f
        r.recompute_time = r.recompute_time + sh.f
        r.recompute_dropped_bytes = r.recompute_dropped_bytes + shared_act
    end
    if s.experts then
        local E, h, ep, etp = s.experts, s.hidden, o.ep, o.etp
        local El = E // ep
        local Tr = o.sp and T / t or T
        local S, cap = M.routed_tokens(s, Tr)
        local m = ep * etp * S / E
        if not s.pad_to_capacity then
            m = m * o.imbalance
            if cap then m = math.min(m, ep * etp * cap) end
        end
        local R = El * m -- tokens the loaded rank's experts run (ETP-gathered)
        r.tokens_per_expert, r.routed_tokens, r.capacity = m, S, cap
        -- router: GEMM on the rank's tokens, the score and top-k over Tr x E
        -- (read the e-byte logits, write fp32 scores, top-k reads them and
        -- writes the fp32 probabilities and the 1-byte routing map;
        -- backward reads the probabilities' gradient and the saved scores,
        -- writes the scores' gradient and the e-byte logits' gradient)
        local ro = { f = 0, b = 0, w = 0 }
        linear(ro, dev, Tr, E, h, 1, false)
        memop(ro, dev, Tr * E, e + 13, e + 12)
        r.router_fwd_time, r.router_bwd_time = ro.f, ro.b + ro.w
        -- permute and unpermute, memory-bound (moe_utils.py): permute's
        -- index_select reads and writes each copy (2e*S*h); with several
        -- local experts sort_chunks_by_idxs reorders the received tokens
        -- by expert and back (2e*R*h each way); unpermute reads the copies
        -- and writes the tokens (fused: e*S*h + e*Tr*h; unfused: the
        -- probability product reads and writes the copies first, and
        -- scatter_add's output is zero-filled: 3e*S*h + 2e*Tr*h). Each
        -- backward moves what its forward moved.
        local by = 2 * e * S * h
        if El > 1 and ep > 1 then by = by + 2 * 2 * e * R * h end
        by = by + (s.permute_fusion and (e * S * h + e * Tr * h) or (3 * e * S * h + 2 * e * Tr * h))
        r.permute_fwd_time = roofline.mem_time(dev, by)
        r.permute_bwd_time = r.permute_fwd_time
        -- the local experts: a grouped GEMM at m tokens each (or a loop)
        local ex = mlp_time(s, dev, m, s.expert_ffn / etp, El, not s.grouped_gemm, fq)
        r.expert_fwd_time, r.expert_bwd_time, r.expert_bwd_weight_time = ex.f, ex.b + ex.w, ex.w
        local xe = (s.fp8 and s.fp8_wgrad) and 1 or e
        local f = s.expert_ffn
        if o.modules and o.modules.moe_act and s.grouped_gemm and not set.moe then
            -- moe_act (moe/experts.py TEGroupedMLP, d98e8a64dd): the
            -- activation's output, fc2's input (xe bytes: under FP8 fc2
            -- saves its original input, discarded the same), is not kept;
            -- the backward runs the activation again on the R*f/etp
            -- elements (mlp_time's bytes: SwiGLU 3e, GeLU 2e each)
            local x = roofline.mem_time(dev, R * f / etp * (s.swiglu and 3 or 2) * e)
            r.expert_bwd_time = r.expert_bwd_time + x
            r.recompute_time = r.recompute_time + x
            r.recompute_dropped_bytes = r.recompute_dropped_bytes + R * xe * f / etp
            act = act - R * xe * f / etp
        end
        local frac = (ep - 1) / ep
        r.dispatch_bytes = S * h * a2a_bytes(s.dispatch_dtype, e) * frac
        r.combine_bytes = R / etp * h * e * frac
        r.dispatch_grad_bytes = S * h * a2a_bytes(s.combine_grad_dtype, e) * frac
        r.combine_grad_bytes = r.combine_bytes
        dense = dense + h * E + (s.bias and E or 0)
        r.expert_params = El * mlp_params(s, s.expert_ffn) / etp
        -- router scores (fp32), the experts' inputs and intermediates on
        -- this rank, unpermute's saved expert outputs. Under FP8 with an
        -- FP8 weight gradient, TE's GroupedLinear saves fc1's and fc2's
        -- inputs (the permuted tokens, the activation's output) as their
        -- FP8 column-wise copies, 1 byte an element (as models/fp8.lua's
        -- act_delta for the dense MLP; the scales not counted)
        local kept = 4 * Tr * E + R * (xe * h + (mlp_act(s, e, f) - (e - xe) * f) / etp) +
            e * S * h
        act = act + kept
        if set.moe then
            -- moe (moe_layer.py: the whole MoE layer under
            -- tensor_parallel.checkpoint, d98e8a64dd; it takes the shared
            -- experts' place): none of the layer's tensors is kept but its
            -- input; its backward first runs the forward again (shared
            -- experts, router, permute, dispatch, experts, combine,
            -- unpermute), all-to-alls included (models/expert.lua)
            local gone = kept + (shared_f > 0 and shared_act or 0)
            local rerun = r.shared_fwd_time + r.router_fwd_time + r.permute_fwd_time +
                r.expert_fwd_time
            act = act - gone
            r.moe_recompute = true
            r.recompute_time = r.recompute_time + rerun
            r.recompute_dropped_bytes = r.recompute_dropped_bytes + gone
        end
    end
    r.dense_params, r.act_bytes, r.linear_params = dense, act, linear_w
    return r
end

-- The shape of a dense block in a MoE model: s without its MoE fields
-- (an MLA model's dense blocks keep MLA).
local function dense_shape(s)
    local d = {}
    for k, v in pairs(s) do
        if not M.FIELDS[k] then d[k] = v end
    end
    return d
end

-- Appends "block 0" .. "block L-1" and the multi-token prediction blocks
-- "mtp 0" .. to layers (models/transformer.lua M.build, which appends the
-- head and the MTP heads). A MoE block carries moe = true and the shape s;
-- a dense block the shape without MoE fields. DeepSeek-V3's MTP module
-- (report Sec. 2.2; Megatron's multi_token_prediction.py
-- MultiTokenPredictionLayer): two norms (of the hidden state and of the
-- next token's embedding), a 2h -> h projection of their concatenation,
-- a block like the model's last (MoE when the last block is: Megatron's
-- gpt_builders.py builds it from decoder_layer_specs[-1], d98e8a6), then
-- the shared output head. It runs on the last pipeline stage, beside the
-- head.
function M.add_blocks(s, layers, out_bytes)
    if s.fp8 and s.fp8_bf16_first + s.fp8_bf16_last > 0 then
        check.fail("transformer: fp8_bf16_first/fp8_bf16_last with experts, MLA or MTP " ..
            "blocks is not modelled")
    end
    local sd = s.experts and dense_shape(s) or s
    local function block(name, moe)
        local f = M.block_figures(moe and s or sd, moe)
        layers[#layers + 1] = {
            name = name, kind = "block", fwd_flops = f.fwd_flops, params = f.params,
            active_params = f.active_params, act_bytes = f.act_bytes, out_bytes = out_bytes,
            shape = moe and s or sd, moe = moe or nil,
        }
        return layers[#layers]
    end
    for i = 0, s.layers - 1 do block("block " .. i, M.is_moe(s, i)) end
    local h, T = s.hidden, s.seq * s.microbatch
    local e = transformer().DTYPE_BYTES[s.dtype]
    local norms = 2 * (s.norm == "layernorm" and 2 or 1) * h
    local proj = 2 * h * h + (s.bias and h or 0)
    for d = 0, s.mtp_layers - 1 do
        local l = block("mtp " .. d, M.is_moe(s, s.layers - 1))
        l.mtp = true
        l.params, l.active_params = l.params + proj + norms, l.active_params + proj + norms
        l.fwd_flops = l.fwd_flops + 2 * T * 2 * h * h
        -- the two norms' inputs and the projection's 2h-wide input
        l.act_bytes = l.act_bytes + 2 * e * T * h + 2 * e * T * h
    end
end

return M
