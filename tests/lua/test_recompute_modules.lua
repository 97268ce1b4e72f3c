-- Selective recompute by module (Megatron's --recompute-modules,
-- lua/pipesim/recompute.lua, models/moe.lua discarded): the bytes one
-- block no longer keeps and the forward its backward runs again, worked by
-- hand on one H100 at tp 1, and the bad input with its message.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local models = ps.models
local roofline = require "pipesim.models.roofline"
local parallel = require "pipesim.parallel"

local dev = ps.clusters.device("h100")
local mt, g = roofline.mem_time, roofline.gemm_time
local function cost(shape, modules)
    return models.moe.block_cost(shape, { device = dev, modules = modules })
end

-- A small MoE block (test_moe.lua's): h = 64, s = 32, b = 1, bf16, SwiGLU,
-- 4 experts of 32, top-2, grouped GEMM; at ep = 1 the rank's experts run
-- R = 32 x 2 = 64 token copies.
local small = { layers = 2, hidden = 64, heads = 4, seq = 32, vocab = 100, swiglu = true,
                ffn_hidden = 96, experts = 4, topk = 2, expert_ffn = 32, shared_experts = 1 }
local moe = models.transformer(small)[2].shape
local base = cost(moe, nil)
H.eq(base.recompute_time, 0, "no module: nothing recomputed")

-- layernorm: the two norms' outputs, 2 x 2 bytes x 32 x 64 = 8192, not
-- kept; both norms' forward again (read x, write y: 2 x 8192 bytes)
local ln = cost(moe, { layernorm = true })
H.eq(base.act_bytes - ln.act_bytes, 8192, "layernorm: the norms' outputs dropped")
H.near(ln.attn_bwd_time - base.attn_bwd_time, mt(dev, 16384), 1e-12,
    "layernorm: both norms' forward in the backward")
H.near(ln.recompute_time, mt(dev, 16384), 1e-12, "layernorm: recompute_time")
H.eq(ln.attn_fwd_time, base.attn_fwd_time, "layernorm: the forward unchanged")

-- moe_act: fc2's input, 64 copies x 32 x 2 bytes = 4096, not kept; SwiGLU
-- again on 64 x 32 elements (3 x 2 bytes each)
local ma = cost(moe, { moe_act = true })
H.eq(base.act_bytes - ma.act_bytes, 4096, "moe_act: the experts' activation output dropped")
H.near(ma.expert_bwd_time - base.expert_bwd_time, mt(dev, 64 * 32 * 6), 1e-12,
    "moe_act: the activation's forward in the experts' backward")
H.eq(ma.attn_bwd_time, base.attn_bwd_time, "moe_act: the attention's backward unchanged")

-- mla_up_proj on test_moe.lua's MLA block (H = 4, q_lora 16, kv_lora 8,
-- qk 8 + rope 4, v 8): Q and K 2 x 2 x 32 x 4 x 12 = 6144 and V 2 x 32 x
-- 4 x 8 = 2048 not kept; q up (16 -> 48), kv up (8 -> 64) and RoPE over
-- 32 x 4 x (4 + 1) elements (2 x 2 bytes) again
local mla = models.transformer { layers = 1, hidden = 64, heads = 4, seq = 32, vocab = 100,
    swiglu = true, ffn_hidden = 96, multi_latent_attention = true, q_lora_rank = 16,
    kv_lora_rank = 8, qk_head_dim = 8, qk_pos_emb_head_dim = 4, v_head_dim = 8 }
local mb, mu = cost(mla[2].shape, nil), cost(mla[2].shape, { mla_up_proj = true })
H.eq(mb.act_bytes - mu.act_bytes, 8192, "mla_up_proj: Q, K and V dropped")
local up = g(dev, 32, 48, 16, 1) + g(dev, 32, 64, 8, 1) + mt(dev, 32 * 4 * 5 * 4)
H.near(mu.attn_bwd_time - mb.attn_bwd_time, up, 1e-12,
    "mla_up_proj: the up projections and RoPE in the backward")

-- through ps.run's lowering: the same figures, and a plain dense block's
-- layernorm (2 x 2 x 32 x 64 bytes; its two norms' forward again)
local function lowered(layers, modules)
    return parallel.prepare({ layers = layers, stages = 1, recompute = "selective",
        recompute_modules = modules }, dev, nil, nil).layers[2]
end
local lm0, lm1 = lowered(mla, { "core_attn" }), lowered(mla, { "core_attn", "mla_up_proj" })
H.eq(lm0.act_bytes - lm1.act_bytes, 8192, "ps.run: mla_up_proj's bytes")
H.near(lm1.bwd_input_time - lm0.bwd_input_time, up, 1e-12, "ps.run: mla_up_proj's time")
local dense = models.transformer { layers = 1, hidden = 64, heads = 4, seq = 32, vocab = 100,
    swiglu = true, ffn_hidden = 96 }
local d0, d1 = lowered(dense, {}), lowered(dense, { "layernorm" })
H.eq(d0.act_bytes - d1.act_bytes, 8192, "dense block: layernorm's bytes")
H.near(d1.bwd_input_time - d0.bwd_input_time, mt(dev, 16384), 1e-12, "dense block: its time")
local dc = lowered(dense, nil)
H.check(dc.bwd_input_time > d0.bwd_input_time, "the default is core_attn (selective as before)")

-- shared_experts (moe_layer.py, tensor_parallel.checkpoint): the shared
-- MLP's intermediates, 32 tokens x 3 x 2 bytes x 32 = 6144, not kept; its
-- forward again: fc1 (64 -> 2 x 32), SwiGLU over 32 x 32 elements (3 x 2
-- bytes), fc2 (32 -> 64)
local shared_again = g(dev, 32, 64, 64, 1) + mt(dev, 32 * 32 * 6) + g(dev, 32, 64, 32, 1)
local se = cost(moe, { shared_experts = true })
H.eq(base.act_bytes - se.act_bytes, 6144, "shared_experts: the shared MLP's intermediates")
H.near(se.shared_bwd_time - base.shared_bwd_time, shared_again, 1e-12,
    "shared_experts: its forward in the backward")
H.near(se.recompute_time, shared_again, 1e-12, "shared_experts: recompute_time")

-- moe (the whole MoE layer checkpointed): router scores 4 x 32 x 4 =
-- 512, the 64 copies' inputs and intermediates 64 x (2 x 64 + 3 x 2 x
-- 32) = 20480, unpermute's saved outputs 2 x 64 x 64 = 8192, and the
-- shared experts' 6144 not kept; shared experts, router, permute and
-- experts forward again
local mo = cost(moe, { moe = true })
H.eq(base.act_bytes - mo.act_bytes, 512 + 20480 + 8192 + 6144, "moe: the layer's tensors")
H.near(mo.recompute_time, base.shared_fwd_time + base.router_fwd_time + base.permute_fwd_time +
    base.expert_fwd_time, 1e-12, "moe: the layer's forward again")
H.eq(cost(moe, { moe = true, shared_experts = true, moe_act = true }).act_bytes, mo.act_bytes,
    "moe takes shared_experts' and moe_act's place")
-- lowered: the backward runs the forward first; with ep > 1 its dispatch
-- and combine ride in the backward's all-to-alls of their direction
local function lowered_ep(modules)
    return parallel.prepare({ layers = models.transformer(small), stages = 1, ep = 2,
        recompute = "selective", recompute_modules = modules }, dev, nil, nil).layers[2]
end
local e0, e1 = lowered_ep({}), lowered_ep({ "moe" })
local mo2 = models.moe.block_cost(moe, { device = dev, ep = 2, modules = { moe = true } })
H.near(e1.bwd_time - e0.bwd_time, mo2.recompute_time, 1e-12, "ps.run: moe's time in the backward")
H.near(e1.moe_dispatch_grad_bytes, e0.moe_dispatch_grad_bytes + e0.moe_dispatch_bytes, 1e-9,
    "ps.run: the recomputed dispatch beside the combine's gradient")
H.near(e1.moe_combine_grad_bytes, e0.moe_combine_grad_bytes + e0.moe_combine_bytes, 1e-9,
    "ps.run: the recomputed combine beside the dispatch's gradient")
H.eq(e1.moe_dispatch_bytes, e0.moe_dispatch_bytes, "ps.run: the forward's all-to-alls unchanged")

-- mlp on a plain dense block: its intermediates, 32 x 3 x 2 x 96 = 18432
-- bytes, not kept; fc1 (64 -> 192), SwiGLU over 32 x 96 and fc2 again
local dm0, dm1 = lowered(dense, {}), lowered(dense, { "mlp" })
H.eq(dm0.act_bytes - dm1.act_bytes, 18432, "mlp: the dense MLP's intermediates")
H.near(dm1.bwd_input_time - dm0.bwd_input_time,
    g(dev, 32, 192, 64, 1) + mt(dev, 32 * 96 * 6) + g(dev, 32, 64, 96, 1), 1e-12,
    "mlp: the dense MLP's forward in the backward")

-- ps.models.megatron hands the list to ps.run
local node = ps.clusters.dgx("H100", 1)
local args = { num_layers = 2, hidden_size = 64, num_attention_heads = 4, seq_length = 32,
    max_position_embeddings = 32, vocab_size = 100, micro_batch_size = 1, global_batch_size = 1,
    bf16 = true, recompute_granularity = "selective", recompute_modules = { "layernorm" },
    cluster = ps.cluster { ranks = 1, device = node.device, link = node.intra } }
H.eq(models.megatron(args).recompute_modules[1], "layernorm", "megatron: the list passed on")

-- hardware FLOPs (efficiency.lua): mla_up_proj repeats q up and kv up,
-- 2 x (16 x 48 + 8 x 64) = 2560 per token; without core_attn the core is
-- not repeated; layernorm and moe_act add no GEMM FLOPs
local one = ps.cluster { ranks = 1, device = node.device, link = node.intra }
local function extra(modules)
    local r = ps.run { cluster = one, layers = mla, stages = 1, microbatches = 1, record = "none",
                       recompute = "selective", recompute_modules = modules }
    return r.efficiency.hardware_flops - r.efficiency.model_flops
end
H.eq(extra({ "mla_up_proj" }), 2560 * 32, "mla_up_proj: the up projections' FLOPs again")
H.eq(extra({ "layernorm" }), 0, "layernorm: no GEMM FLOPs")
H.eq(extra({ "mlp" }), 6 * 64 * 96 * 32, "mlp: the dense MLP's 6 h f per token again")
H.eq(extra({ "core_attn", "mla_up_proj" }) - extra({ "mla_up_proj" }), extra(nil),
    "core_attn: the default's core FLOPs")

-- bad input, each a one-line message naming the value
local function run_with(layers, rc, modules)
    return function()
        parallel.prepare({ layers = layers, stages = 1, recompute = rc, recompute_modules = modules },
            dev, nil, nil)
    end
end
H.raises(run_with(dense, "selective", { "core_atn" }),
    "field 'recompute_modules'[1]: unknown module 'core_atn' (Megatron-Core 0.20 allows " ..
    "core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts,")
H.raises(run_with(dense, "selective", { "gdn_norm_out" }),
    "field 'recompute_modules'[1]: module 'gdn_norm_out' is not modelled")
H.raises(run_with(models.transformer(small), "selective", { "mlp" }),
    "recompute_modules: mlp needs dense blocks with an MLP; this model has none")
H.raises(run_with(dense, "selective", { "shared_experts" }),
    "recompute_modules: shared_experts needs MoE blocks with shared experts; this model has none")
H.raises(run_with(dense, "selective", { "moe" }),
    "recompute_modules: moe needs MoE blocks; this model has none")
H.raises(run_with(dense, "selective", "layernorm"),
    "field 'recompute_modules' must be a list of Megatron's module names, got 'layernorm'")
H.raises(run_with(dense, "none", { "layernorm" }),
    "field 'recompute_modules' needs recompute = 'selective' (got 'none')")
H.raises(run_with(dense, "selective", { "mla_up_proj" }),
    "recompute_modules: mla_up_proj needs multi_latent_attention")
H.raises(run_with(dense, "selective", { "moe_act" }),
    "recompute_modules: moe_act needs MoE blocks with grouped_gemm")
H.raises(run_with(models.transformer(setmetatable({ grouped_gemm = false }, { __index = small })),
    "selective", { "moe_act" }), "moe_act needs MoE blocks with grouped_gemm")
args.recompute_granularity = nil
H.raises(function() models.megatron(args) end,
    "megatron: recompute_modules needs recompute_granularity 'selective' (got 'none')")
H.done()
