-- Mixture-of-experts, multi-latent attention and multi-token prediction
-- blocks (models/moe.lua, models/mla.lua): figures worked by hand, the MoE
-- presets against their published total and active parameter counts,
-- moe.block_cost against its closed forms, and bad input with its message.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local models = ps.models
local roofline = require "pipesim.models.roofline"

-- A small MoE: h=64, 4 heads (head_dim 16), s=32, b=1, SwiGLU, RMSNorm,
-- 4 experts of 32, top-2, one shared expert of 32, bf16, no dropout.
--   attention params 4h^2 = 16384 + two RMSNorms 128 = 16512
--   router h*E = 256; an expert 3*64*32 = 6144 (x4 = 24576); shared 6144
--   FLOPs: QKV 2*32*64*192 = 786432, out 262144, core 4*32^2*64 = 262144;
--     router 2*32*64*4 = 16384; 64 routed copies x 6*64*32 = 786432;
--     shared 32 x 12288 = 393216
--   act: norms 8192, QKV in 4096, Q+K 8192, V 4096, out in 4096, MLP in
--     4096, softmax 2*4*32*32 = 8192 (40960); router scores 4*32*4 = 512;
--     64 copies x (2*2*64 in/out + 3*2*32) = 28672; shared 32*3*2*32 = 6144
local small = { layers = 2, hidden = 64, heads = 4, seq = 32, vocab = 100, swiglu = true,
                ffn_hidden = 96, experts = 4, topk = 2, expert_ffn = 32, shared_experts = 1 }
local function with(t, u)
    local r = {}
    for k, v in pairs(t) do r[k] = v end
    for k, v in pairs(u) do r[k] = v end
    return r
end
local L = models.transformer(small)
H.eq(#L, 4, "embedding, 2 blocks, head")
H.eq(L[2].moe, true, "block 0 is MoE")
H.eq(L[2].params, 16512 + 256 + 24576 + 6144, "MoE block params")
H.eq(L[2].active_params, 16512 + 256 + 2 * 6144 + 6144, "MoE block active params")
H.eq(L[2].fwd_flops, 786432 + 262144 + 262144 + 16384 + 786432 + 393216, "MoE block FLOPs")
H.eq(L[2].act_bytes, 40960 + 512 + 28672 + 6144, "MoE block activations")
local t = models.total(L)
H.eq(t.active_params, t.params - 2 * 2 * 6144, "total active: two experts fewer per block")

-- moe_layers: every second block (Megatron's --moe-layer-freq 2: blocks 0,
-- 2), or a 0/1 list; dense blocks take ffn_hidden and a shape without
-- the MoE fields (ps.run times them as today)
local L3 = models.transformer { layers = 3, hidden = 64, heads = 4, seq = 32, vocab = 100,
                                swiglu = true, ffn_hidden = 96, experts = 4, moe_layers = 2 }
H.eq({ L3[2].moe, L3[3].moe, L3[4].moe }, { true, nil, true }, "moe_layers = 2")
H.eq(L3[3].params, 16512 + 3 * 64 * 96, "the dense block: attention + 3hf")
H.eq(L3[3].shape.experts, nil, "the dense block's shape has no experts")
local Ll = models.transformer { layers = 3, hidden = 64, heads = 4, seq = 32, vocab = 100,
                                swiglu = true, experts = 4, moe_layers = { 0, 1, 1 } }
H.eq({ Ll[2].moe, Ll[3].moe, Ll[4].moe }, { nil, true, true }, "moe_layers list")
-- a normalized shape normalizes to itself
local sh = models.shape("deepseek-v3")
H.eq(models.formulas.normalize(sh), sh, "normalizing twice is harmless")

-- capacity (Megatron's get_capacity(T*topk, E, factor) = ceil(T*k/E*f)):
-- T = 32, k = 2, E = 4: factor 0.5 -> 8 per expert, 32 of 64 copies kept;
-- padded at factor 1.5 -> 24 per expert, 96 copies
H.eq({ models.moe.routed_tokens(L[2].shape, 32) }, { 64 }, "even routing: T*k copies")
local drop = models.transformer(with(small, { capacity_factor = 0.5 }))[2].shape
H.eq({ models.moe.routed_tokens(drop, 32) }, { 32, 8 }, "capacity 0.5 drops half")
local pad = models.transformer(with(small, { capacity_factor = 1.5, pad_to_capacity = true }))[2].shape
H.eq({ models.moe.routed_tokens(pad, 32) }, { 96, 24 }, "padded to capacity 24")

-- Multi-latent attention by hand: h=64, 4 heads, q_lora 16, kv_lora 8,
-- qk_head_dim 8, rope 4, v_head_dim 8, s=32, no MLP experts:
--   q down 64*16 = 1024, q up 16*4*12 = 768, kv down 64*12 = 768, kv up
--   8*4*16 = 512, proj 32*64 = 2048, latent RMSNorms 16 + 8: 5144;
--   block norms 128, SwiGLU MLP 3*64*96 = 18432
--   FLOPs: 2*32*5120 = 327680 linears, core 2*32^2*4*(12 + 8) = 163840,
--   MLP 6*32*64*96 = 1179648
local mla_shape = { layers = 1, hidden = 64, heads = 4, seq = 32, vocab = 100, swiglu = true,
                    ffn_hidden = 96, multi_latent_attention = true, q_lora_rank = 16,
                    kv_lora_rank = 8, qk_head_dim = 8, qk_pos_emb_head_dim = 4, v_head_dim = 8 }
local M1 = models.transformer(mla_shape)
H.eq(M1[2].params, 5144 + 128 + 18432, "MLA block params")
H.eq(M1[2].fwd_flops, 327680 + 163840 + 1179648, "MLA block FLOPs")
-- act: down-proj input 2*32*64 = 4096, latents 2*2*32*(8 + 16) = 3072, Q
-- and K 2*2*32*4*12 = 6144, V and proj input 2*2*32*32 = 4096, softmax
-- 2*4*32*32 = 8192; block: norm inputs and MLP input 3*4096, SwiGLU
-- 3*2*32*96 = 18432
H.eq(M1[2].act_bytes, 4096 + 3072 + 6144 + 4096 + 8192 + 12288 + 18432, "MLA block activations")
H.eq(models.mla.kv_cache_bytes(M1[2].shape, 2), 24, "MLA KV cache (8 + 4) x 2 bytes per token")

-- Multi-token prediction: one MTP block (the block + eh projection 2h^2
-- and two norms) and its head sharing the output layer
local mtp = models.transformer(with(small, { mtp_layers = 1 }))
H.eq(#mtp, 6, "embedding, 2 blocks, mtp 0, head, mtp 0 head")
H.eq({ mtp[4].name, mtp[4].mtp, mtp[6].name, mtp[6].shared_params },
     { "mtp 0", true, "mtp 0 head", 6400 }, "MTP layers")
H.eq(mtp[4].params, L[2].params + 2 * 64 * 64 + 128, "MTP block params")
-- the MTP block is built like the last block (Megatron: decoder_layer_specs[-1]):
-- dense when moe_layers leaves the last block dense
local mtp_d = models.transformer(with(small, { mtp_layers = 1, moe_layers = { 1, 0 } }))
H.eq({ mtp_d[3].moe, mtp_d[4].name, mtp_d[4].moe }, { nil, "mtp 0", nil },
    "the MTP block after a dense last block is dense")
H.eq(mtp[4].fwd_flops, L[2].fwd_flops + 2 * 32 * 128 * 64, "MTP block FLOPs")
H.eq(models.total(mtp).params, t.params + L[2].params + 8192 + 128 + 64,
    "MTP adds its block, projection, norms and head norm (the head is shared)")

-- Presets: totals within 1% (or the published rounding, or the gap a
-- preset states), active counts within 2%: published with two
-- significant figures, and publishers differ on whether the input
-- embedding (a lookup) and the router count as active (Qwen3-30B-A3B's
-- 3.35B against "3.3B" is the widest, 1.6%).
local n = 0
for _, name in ipairs(models.presets()) do
    local act, no_emb = models.published_active(name)
    if act then
        n = n + 1
        local layers = models.preset(name)
        local tot = models.total(layers)
        local a = tot.active_params - (no_emb and layers[1].params or 0)
        H.near(a, act, 0.02, name .. " active parameters")
        H.check(tot.active_params < tot.params, name .. ": active below total")
    end
end
H.check(n >= 9, "nine MoE presets with published active counts")
-- DeepSeek-V3: the 671B main model; the checkpoint's 685B (684.5B in its
-- safetensors) adds the MTP module and its copies of embedding and head
local ds = models.preset("deepseek-v3")
local main, mtp_p = 0, 0
for _, l in ipairs(ds) do
    if l.mtp then mtp_p = mtp_p + l.params else main = main + l.params - (l.shared_params or 0) end
end
H.near(main, 671e9, 0.001, "DeepSeek-V3 main model 671B")
H.near(main + mtp_p + 129280 * 7168, 685e9, 0.001, "DeepSeek-V3 checkpoint 685B")
H.eq(ds[2].moe, nil, "DeepSeek-V3 block 0 dense")
H.eq(ds[5].moe, true, "DeepSeek-V3 block 3 MoE")
-- GPT-OSS-120B: the checkpoint's 116,829,156,672 parameters less the 64
-- attention sinks of each of its 36 layers (not modelled)
H.eq(models.total(models.preset("gpt-oss-120b")).params + 36 * 64, 116829156672,
    "GPT-OSS-120B to the parameter, but its sinks")

-- block_cost against its closed forms on an H100 (roofline.gemm_time and
-- mem_time are the roofline's, whose constants are another module's)
local dev = ps.clusters.device("h100")
local s = L[2].shape
local e = 2
local c = models.moe.block_cost(s, { device = dev, ep = 4 })
-- even routing: 32 tokens x top-2 = 64 copies, 3/4 of them leave the rank
H.eq(c.dispatch_bytes, 64 * 64 * 2 * 3 / 4, "dispatch bytes T*k*h*2*(ep-1)/ep")
H.eq(c.combine_bytes, 64 * 64 * 2 * 3 / 4, "combine bytes")
H.eq(c.tokens_per_expert, 64, "ep*S/E = 4*64/4 tokens per local expert")
local g, mt = roofline.gemm_time, roofline.mem_time
H.near(c.expert_fwd_time, g(dev, 64, 64, 64, 1) + mt(dev, 64 * 32 * 3 * e) + g(dev, 64, 64, 32, 1),
    1e-12, "expert forward: fc1 (both halves), SwiGLU, fc2")
H.near(c.expert_bwd_time, g(dev, 64, 64, 64, 1) + g(dev, 64, 64, 64, 1) + mt(dev, 64 * 32 * 5 * e)
    + g(dev, 64, 32, 64, 1) + g(dev, 32, 64, 64, 1), 1e-12, "expert backward: dgrad + wgrad")
-- one local expert: no sort_chunks; unfused unpermute
H.near(c.permute_fwd_time, mt(dev, 2 * e * 64 * 64 + 3 * e * 64 * 64 + 2 * e * 32 * 64), 1e-12,
    "permute + unpermute bytes")
H.near(c.router_fwd_time, g(dev, 32, 4, 64, 1) + mt(dev, 32 * 4 * (e + 13)), 1e-12, "router")
local fp8 = models.moe.block_cost(models.transformer(with(small, { dispatch_dtype = "fp8" }))[2].shape,
    { device = dev, ep = 4 })
H.eq(fp8.dispatch_bytes, 64 * 64 * (1 + 4 / 128) * 3 / 4, "FP8 dispatch: a byte and a scale per 128")
H.eq(fp8.combine_bytes, c.combine_bytes, "combine stays BF16")
-- imbalance 2: the loaded rank's experts run twice the tokens
local c2 = models.moe.block_cost(s, { device = dev, ep = 4, imbalance = 2 })
H.eq(c2.tokens_per_expert, 128, "imbalance 2 doubles the loaded expert's tokens")
H.near(c2.expert_fwd_time, g(dev, 128, 64, 64, 1) + mt(dev, 128 * 32 * 3 * e)
    + g(dev, 128, 64, 32, 1), 1e-12, "the loaded rank's GEMMs at its real token count")
-- memory under EP and ETP (tp 2 with sp): experts 4/2 local, each split
-- 2 ways: 2 x 6144 / 2; dense: attention 16384/2 + norms 128, router 256,
-- shared 6144/2
local c3 = models.moe.block_cost(s, { device = dev, ep = 2, etp = 2, tp = 2, sp = true })
H.eq(c3.expert_params, 6144, "expert params / (ep x etp)")
H.eq(c3.dense_params, 8192 + 128 + 256 + 3072, "dense params per TP rank")
-- and its activations by hand: each rank routes Tr = 32/2 = 16 tokens
-- (sequence parallel), S = 32 copies; each local expert runs m = ep x
-- etp x S / E = 32 of them, R = 2 x 32 = 64 on the rank. Router scores
-- 4 x 16 x 4 = 256; the experts' inputs 2 x 64 each and SwiGLU
-- intermediates 3 x 2 x 32 / etp = 96 each: 64 x 224; unpermute's saved
-- outputs 2 x 32 x 64 = 4096; the shared expert 32 x 3 x 2 x 32 / tp =
-- 3072; the attention half as parallel.lua's block less its MLP
-- (3 x 2 x 96 per token, / tp)
local attn_act = require("pipesim.parallel").block_act_bytes(s, 2, true, false) - 32 * 3 * 2 * 96 / 2
H.eq(c3.act_bytes - attn_act, 256 + 64 * 224 + 4096 + 3072, "MoE activations under EP 2, ETP 2")
-- under FP8 (FP8 weight gradient) TE's GroupedLinear keeps fc1's and
-- fc2's inputs as FP8 copies: per routed token on the rank 1 x 64 + (3 x
-- 2 x 32 - 32) / etp = 144 bytes against BF16's 224; imbalance 2 doubles
-- the rank's R = 64 tokens, so it adds 64 x that
local s8 = models.transformer(with(small, { fp8 = "e4m3" }))[2].shape
local p3 = { device = dev, ep = 2, etp = 2, tp = 2, sp = true }
local function act_at(shape, imb)
    p3.imbalance = imb
    return models.moe.block_cost(shape, p3).act_bytes
end
H.eq(act_at(s, 2) - act_at(s, 1), 64 * 224, "BF16: the routed tokens' kept bytes")
H.eq(act_at(s8, 2) - act_at(s8, 1), 64 * 144, "FP8: the experts' inputs kept as FP8 copies")
-- under FP8 each expert GEMM quantises its input before the forward and
-- its output gradient before the backward (as the dense linears of
-- models/roofline.lua): at ep 2 the rank's 2 experts run m = 32 tokens
-- each; forward fc1 (h 64 -> 2 x 32) at the FP8 rate, SwiGLU (3e bytes),
-- fc2 (32 -> 64), and the casts of 2 x 32 x (64 + 32) elements; the
-- shared expert (32 tokens) the same with one GEMM of each
do
    local q = roofline.fp8.plan(s8, dev)
    local function mlp_fwd(m, batch)
        local qf = batch * m * (64 + 32)
        return roofline.gemm_time(dev, m, 64, 64, batch, nil, q.gemm) +
            roofline.mem_time(dev, batch * m * 32 * 3 * 2) +
            roofline.gemm_time(dev, m, 64, 32, batch, nil, q.gemm) +
            roofline.mem_time(dev, qf * q.quant, 3 * qf)
    end
    local c8 = models.moe.block_cost(s8, { device = dev, ep = 2 })
    H.eq(c8.tokens_per_expert, 32, "32 tokens an expert at ep 2")
    H.near(c8.expert_fwd_time, mlp_fwd(32, 2), 1e-12, "FP8 experts: GEMMs and their casts")
    H.near(c8.shared_fwd_time, mlp_fwd(32, 1), 1e-12, "FP8 shared expert: GEMMs and casts")
    -- backward: each GEMM's dgrad and wgrad, SwiGLU's 5e, and the casts
    -- of fc2's output gradient (h) and fc1's (2 x 32) on 2 x 32 tokens
    local gt, wk = roofline.gemm_time, not q.wgrad_bf16 and q.gemm or nil
    local qb = 2 * 32 * (64 + 64)
    H.near(c8.expert_bwd_time, gt(dev, 32, 64, 64, 2, nil, q.gemm) + gt(dev, 64, 64, 32, 2, nil, wk) +
        roofline.mem_time(dev, 2 * 32 * 32 * 5 * 2) + gt(dev, 32, 32, 64, 2, nil, q.gemm) +
        gt(dev, 32, 64, 32, 2, nil, wk) + roofline.mem_time(dev, qb * q.quant, 3 * qb), 1e-12,
        "FP8 experts' backward: GEMMs and the output gradients' casts")
end
-- small M is far from peak: a DeepSeek-V3 expert at ep 64 (8192 tokens
-- each) against ep 1 (128 each, memory-bound on the weights)
local dsb = ds[10].shape
local big = models.moe.block_cost(dsb, { device = dev, ep = 64 })
local tiny = models.moe.block_cost(dsb, { device = dev, ep = 1 })
local fl = 32768 * 6 * 7168 * 2048 -- the rank's routed FLOPs either way
-- 128 tokens: 128 FLOP per weight byte (2 per bf16 weight and token), so
-- at most 128 x 3.35 TB/s x 0.9 = 386 TFLOP/s, 0.64 of the 599 that
-- gemm_max allows an 8192-token GEMM on H100
H.check(fl / tiny.expert_fwd_time < 0.65 * fl / big.expert_fwd_time,
    "128 tokens per expert run below 65% of the rate of 8192")

-- Bad input, each message asserted
local base = { layers = 2, hidden = 64, heads = 4, seq = 32, vocab = 100 }
H.raises(function() models.transformer(with(base, { experts = 4, topk = 5 })) end,
    "transformer: topk (5) is larger than experts (4)")
H.raises(function() models.transformer(with(base, { experts = 4, moe_layers = { 1, 0, 1 } })) end,
    "transformer: moe_layers has 3 entries, the model has 2 blocks")
H.raises(function() models.transformer(with(base, { experts = 4, moe_layers = { 1, 2 } })) end,
    "transformer: moe_layers[2] must be 0 or 1, got 2")
H.raises(function() models.transformer(with(base, { experts = 4, capacity_factor = 0 })) end,
    "transformer: capacity_factor must be a number > 0, got 0")
H.raises(function() models.transformer(with(base, { experts = 4, pad_to_capacity = true })) end,
    "transformer: pad_to_capacity needs capacity_factor")
H.raises(function() models.transformer(with(base, { topk = 2 })) end,
    "transformer: field 'topk' needs experts")
H.raises(function() models.transformer(with(base, { kv_lora_rank = 8 })) end,
    "transformer: field 'kv_lora_rank' needs multi_latent_attention = true")
H.raises(function() models.transformer(with(base, { experts = 6, router_groups = 4 })) end,
    "transformer: experts (6) is not a multiple of router_groups (4)")
H.raises(function() models.transformer(with(base, { experts = 4, dispatch_dtype = "fp16" })) end,
    "transformer: dispatch_dtype must be one of bf16, fp8, got 'fp16'")
H.raises(function() models.transformer(with(base, { expert = 4 })) end,
    "unknown field 'expert' (did you mean 'experts'?)")
H.raises(function() models.moe.block_cost(s, { device = dev, ep = 3 }) end,
    "moe.block_cost: ep (3) does not divide experts (4)")
H.raises(function() models.moe.block_cost(s, { device = dev, tp = 2 }) end,
    "moe.block_cost: a MoE block with tp = 2 needs sp")
H.raises(function() models.moe.block_cost(s, { device = dev, imbalance = 0.5 }) end,
    "moe.block_cost: imbalance must be a number >= 1")
H.raises(function() models.moe.block_cost(s, {}) end,
    "moe.block_cost: par.device must be a device with roofline constants")
-- ps.run times a dense MLA block, and a dense model's MTP block, with
-- block_cost (its forward is the attention's and the MLP's)
local node = ps.clusters.dgx("H100", 1)
local one = ps.cluster { ranks = 1, device = node.device, link = node.intra }
local mc = models.moe.block_cost(M1[2].shape, { device = dev })
local mr = ps.run { cluster = one, layers = M1, stages = 1, microbatches = 1, record = "summary" }
local dense_mla = ps.run { cluster = one, stages = 1, microbatches = 1, record = "summary",
    layers = models.transformer { layers = 1, hidden = 64, heads = 4, seq = 32, vocab = 100,
                                  swiglu = true, ffn_hidden = 96 } }
H.check(mr.makespan ~= dense_mla.makespan, "an MLA block is not timed as a dense one")
H.near(mc.dense_params, M1[2].params, 1e-12, "block_cost's dense params at tp 1: the layer's")
local dm = models.transformer(with(base, { swiglu = true, ffn_hidden = 96, mtp_layers = 1 }))
local cm = models.moe.block_cost(dm[4].shape, { device = dev, mtp = true })
local c0 = models.moe.block_cost(dm[4].shape, { device = dev })
H.eq(cm.dense_params - c0.dense_params, 2 * 64 * 64 + 2 * 64, "MTP: eh_proj 2h^2 and two norms")
H.near(cm.attn_fwd_time - c0.attn_fwd_time,
    mt(dev, 2 * 32 * 64 * 2 * e) + g(dev, 32, 64, 128, 1), 1e-12, "MTP: two norms and eh_proj")
H.eq(cm.dense_params, dm[4].params, "the MTP layer's params")
ps.run { cluster = one, layers = dm, stages = 1, microbatches = 1, record = "none" }

-- Model FLOPs (efficiency.lua, meta.efficiency) of MoE, MLA and MTP
-- models: Megatron-LM d98e8a6's transformer_flops. The MLA block above
-- (s = 32, one block, vocab 100), per token: 6 x (q_lora 16 x (64 + 4 x
-- 12 + 1) + kv_lora 8 x (64 + 4 x 16 + 1) + 64 x 4 + 4 x 8 x 64) = 30864,
-- SwiGLU MLP 6 x 3 x 64 x 96 = 110592, logits 6 x 64 x 100 = 38400; the
-- core 6 x (4 x 12 / 2 + 4 x 8 / 2) = 240 per token and key, x s^2
local E = require "pipesim.efficiency"
H.eq(mr.efficiency.model_flops, 32 * (30864 + 110592 + 38400) + 240 * 32 * 32,
    "MLA model FLOPs, Megatron's MLA branch")
-- selective recompute repeats the core: 2 x 240 / 6 per token and key
local sel = ps.run { cluster = one, layers = M1, stages = 1, microbatches = 1, record = "none",
                     recompute = "selective" }
H.eq(sel.efficiency.hardware_flops - sel.efficiency.model_flops, 80 * 32 * 32,
    "MLA selective recompute: the core's forward again")
-- DeepSeek-V3 (3 dense blocks, 58 MoE, 1 MTP block like the last: MoE),
-- per token: dense MLPs 3 x 3h x 18432, MoE 59 x 3h x (8 + 1) x 2048, MLA
-- linears 62 x (1536 (h + 128 x 192 + 1) + 512 (h + 128 x 256 + 1) + 64h +
-- 128 x 128 h), MTP norms and projection 3h + 2h^2, logits 2hV; the core
-- 62 x 128 x (192 + 128) / 2 x s; all x 6 (forward, two backward GEMMs)
do
    local hh, V, S = 7168, 129280, 4096
    local per = hh * (3 * 3 * 18432 + 59 * 3 * 9 * 2048)
        + 62 * (1536 * (hh + 128 * 192 + 1) + 512 * (hh + 128 * 256 + 1) + 64 * hh + 128 * 128 * hh)
        + 3 * hh + 2 * hh * hh + 2 * hh * V + 62 * 128 * 320 / 2 * S
    local f = E.figures({ layers = ds, microbatches = 2, dp = 3 }, nil, { flops = 989e12 })
    H.near(f.model_flops, 6 * per * S * 2 * 3, 1e-12, "DeepSeek-V3 model FLOPs, Megatron's")
    H.eq(f.tokens, S * 6, "tokens of 2 microbatches x 3 replicas")
    -- the multiply-adds per token outside the core are the active
    -- parameters but the embedding, plus the MTP head's (shared) h x V,
    -- less the routers' h x E, which Megatron leaves out (and norms, 1e-5)
    local act = models.total(ds).active_params - ds[1].params
    H.near(per - 62 * 128 * 320 / 2 * S, act + hh * V - 59 * hh * 256, 1e-4,
        "multiply-adds per token: the active parameters")
end

-- full recompute of the first block of each stage chunk, on a model of MoE
-- and dense blocks (L3: MoE, dense, MoE): chunk { embedding, block 0 }
-- repeats the MoE block, chunk { block 1, block 2, head } the dense one
do
    local fr = E.figures({ layers = L3, recompute = "full", recompute_method = "block",
                           recompute_layers = 1 }, { 2, 3 }, nil)
    local moe_f, dense_f = E.block_token_flops(L3[2].shape), E.block_token_flops(L3[3].shape)
    H.eq(moe_f - dense_f, 2 * 3 * 64 * 96, "MoE: two experts of ffn_hidden 96 against one MLP")
    H.eq(fr.hardware_flops - fr.model_flops, 32 * (moe_f + dense_f), "recomputed: each its own")
end

-- a dense model's FLOPs in floats: the 310B's full recompute over 20,000
-- sequences once passed 2^63 as integers (a negative hardware_flops)
do
    local g310 = models.preset("gpt-310b")
    local f = E.figures({ layers = g310, microbatches = 20000, recompute = "full" }, nil, nil)
    H.near(f.hardware_flops, f.model_flops + f.tokens * 96 * E.block_token_flops(g310[2].shape),
        1e-12, "GPT 310B full recompute: every block's forward again")
    H.check(f.model_flops > 1e19 and f.hardware_flops > f.model_flops, "no integer wrap")
end

-- ps.run times MoE blocks with block_cost (expert parallelism's lowering,
-- lua/pipesim/expert.lua; its tests in test_ep.lua)
-- one rank, one microbatch: the step is its layers' forward and backward
-- and the optimizer step, as lowered (parallel.prepare, parallel.finish)
do
    local spec = { cluster = one, layers = L, stages = 1, microbatches = 1, record = "none" }
    local par = require "pipesim.parallel"
    local plan = par.prepare(spec, ps.clusters.device("H100"), function() return 0 end)
    local args = {}
    par.finish(plan, { #plan.layers }, args, ps.clusters.device("H100"), spec)
    local step = args.optimizer_time
    for _, l in ipairs(args.layers) do step = step + l.fwd_time + l.bwd_time end
    H.near(ps.run(spec).makespan, step, 1e-12, "a MoE model's one-rank step")
end

-- ps.models.megatron: DeepSeek-V3's flags (the report's model; Megatron's
-- names) give the preset's model, and ep / dispatcher for ps.run
local ds_flags = {
    num_layers = 61, hidden_size = 7168, ffn_hidden_size = 18432, num_attention_heads = 128,
    seq_length = 4096, max_position_embeddings = 4096, vocab_size = 129280, swiglu = true,
    untie_embeddings_and_output_weights = true, normalization = "RMSNorm",
    position_embedding_type = "rope", disable_bias_linear = true, attention_dropout = 0,
    hidden_dropout = 0, bf16 = true, num_experts = 256, moe_router_topk = 8,
    moe_ffn_hidden_size = 2048, moe_shared_expert_intermediate_size = 2048,
    moe_layer_freq = "([0]*3+[1]*58)", moe_router_score_function = "sigmoid",
    moe_router_enable_expert_bias = true, moe_router_num_groups = 8, moe_router_group_topk = 4,
    moe_aux_loss_coeff = 1e-4, moe_grouped_gemm = true, moe_token_dispatcher_type = "alltoall",
    multi_latent_attention = true, q_lora_rank = 1536, kv_lora_rank = 512, qk_head_dim = 128,
    qk_pos_emb_head_dim = 64, v_head_dim = 128, mtp_num_layers = 1,
    expert_model_parallel_size = 64, world_size = 1024,
    micro_batch_size = 1, global_batch_size = 15360,
}
local run, dshape, info = models.megatron(ds_flags)
H.eq(models.total(run.layers).params, models.total(models.preset("deepseek-v3")).params,
    "the flags build the preset's parameters")
H.eq({ run.ep, run.etp, run.moe_dispatcher, run.stages, run.dp },
     { 64, nil, "alltoall", 1, 1024 }, "expert parallelism passed on to ps.run")
H.eq({ dshape.router_groups, dshape.mtp_layers, dshape.grouped_gemm }, { 8, 1, true },
    "router groups, MTP and grouped GEMM from the flags")
H.eq(info.ignored, { "moe_aux_loss_coeff", "moe_router_enable_expert_bias",
                     "moe_router_score_function" },
    "loss, bias-update and score-function flags accepted as ignored")
local function mflags(u) return with({ num_layers = 2, hidden_size = 64, num_attention_heads = 4,
    seq_length = 32, vocab_size = 100 }, u) end
H.eq(select(2, models.megatron(mflags { num_experts = 4, moe_layer_freq = 2 })).moe_layers,
    { 1, 0 }, "moe_layer_freq 2")
H.eq(select(2, models.megatron(mflags { num_experts = 4, moe_layer_freq = "[0,1]" })).moe_layers,
    { 0, 1 }, "moe_layer_freq as a list expression")
H.eq(select(2, models.megatron(mflags { num_experts = 4 })).grouped_gemm, false,
    "Megatron's default: no grouped GEMM")
H.eq(models.megatron(mflags { num_experts = 4 }).moe_dispatcher, "allgather",
    "Megatron's default dispatcher")
H.raises(function() models.megatron(mflags { moe_router_topk = 4 }) end,
    "megatron: flag 'moe_router_topk' needs num_experts")
H.raises(function() models.megatron(mflags { kv_lora_rank = 64 }) end,
    "megatron: flag 'kv_lora_rank' needs multi_latent_attention")
H.raises(function() models.megatron(mflags { num_experts = 6, expert_model_parallel_size = 4 }) end,
    "megatron: num_experts (6) is not divisible by expert_model_parallel_size (4)")
H.raises(function()
    models.megatron(mflags { num_experts = 4, tensor_model_parallel_size = 2, world_size = 2 })
end, "megatron: num_experts with tensor_model_parallel_size 2 needs sequence_parallel")
H.raises(function() models.megatron(mflags { num_experts = 4, moe_layer_freq = "[0,1]*x" }) end,
    "megatron: moe_layer_freq '[0,1]*x' is not an integer or a list expression")
H.raises(function() models.megatron(mflags { num_experts = 4, moe_layer_freq = "[1]*3" }) end,
    "transformer: moe_layers has 3 entries, the model has 2 blocks")
H.raises(function() models.megatron(mflags { num_experts = 4, moe_token_dispatcher_type = "a2a" }) end,
    "megatron: flag 'moe_token_dispatcher_type' must be one of allgather, alltoall, flex, got 'a2a'")
H.raises(function() models.megatron(mflags { num_experts = 4, moe_enable_deepep = true }) end,
    "megatron: flag 'moe_enable_deepep' = true changes the step's time or memory and is not modelled")

-- every MoE, MLA and MTP flag ps.models.megatron reads changes the model
-- or the run it builds: its parameters, FLOPs, activations, layers, the
-- expert-parallel fields, the router groups, or its first MoE block's cost
local function built(f)
    local r, sh0 = models.megatron(f)
    local tt = models.total(r.layers)
    local sig = { tt.params, tt.fwd_flops, tt.act_bytes, #r.layers, r.ep or 1, r.etp or 0,
                  r.moe_dispatcher or "", sh0.router_groups or 0, sh0.router_group_topk or 0,
                  r.ep_overlap or false }
    for _, l in ipairs(r.layers) do
        if l.moe then
            local cc = models.moe.block_cost(l.shape, { device = dev, ep = r.ep, etp = r.etp })
            for _, k in ipairs { "expert_fwd_time", "permute_fwd_time", "dispatch_bytes",
                                 "dispatch_grad_bytes" } do sig[#sig + 1] = cc[k] end
            break
        end
    end
    return sig
end
local EP2 = { expert_model_parallel_size = 2, world_size = 2 }
local MLA = { multi_latent_attention = true }
local MOE_VARY = {
    num_experts = { 8 }, moe_router_topk = { 3 }, moe_ffn_hidden_size = { 32 },
    moe_shared_expert_intermediate_size = { 64 }, moe_layer_freq = { 2 },
    moe_expert_capacity_factor = { 0.5 },
    moe_pad_expert_input_to_capacity = { true, { moe_expert_capacity_factor = 1.5 } },
    moe_grouped_gemm = { true }, moe_permute_fusion = { true }, moe_router_num_groups = { 2 },
    moe_router_group_topk = { 1, { moe_router_num_groups = 2 } },
    moe_dispatch_fwd_dtype = { "fp8", EP2 }, moe_combine_bwd_dtype = { "fp8", EP2 },
    moe_token_dispatcher_type = { "alltoall" }, expert_model_parallel_size = { 2, { world_size = 2 } },
    expert_tensor_parallel_size = { 2, { world_size = 2 } }, multi_latent_attention = { true },
    q_lora_rank = { 16, MLA }, kv_lora_rank = { 16, MLA }, qk_head_dim = { 8, MLA },
    qk_pos_emb_head_dim = { 8, MLA }, v_head_dim = { 8, MLA }, mtp_num_layers = { 1 },
    -- HybridEP is costed as DeepEP (models/moe_flex.lua): the same run
    moe_flex_dispatcher_backend = { "hybridep", { moe_token_dispatcher_type = "flex" }, same = true },
    -- ps.run's ep_overlap (tests/lua/test_ep_overlap.lua); delay_wgrad_compute
    -- needs it and adds nothing to pipesim's layer pairs
    overlap_moe_expert_parallel_comm = { true, { expert_model_parallel_size = 2, world_size = 2,
        moe_token_dispatcher_type = "alltoall" } },
    delay_wgrad_compute = { true, { expert_model_parallel_size = 2, world_size = 2,
        moe_token_dispatcher_type = "alltoall", overlap_moe_expert_parallel_comm = true },
        same = true },
}
local walked = 0
for name in pairs(require("pipesim.models.megatron_moe").FLAGS) do
    local v = MOE_VARY[name]
    if H.check(v ~= nil, "a variation for MoE flag " .. name) then
        local b = mflags(with({ num_experts = 4 }, v[2] or {}))
        H.check(H.same(built(b), built(with(b, { [name] = v[1] }))) == (v.same == true),
            name .. (v.same and " is costed as its default" or " changes the model or the run"))
        walked = walked + 1
    end
end
H.check(walked >= 23, string.format("walked %d MoE flags", walked))

H.done()
