-- Context parallelism (lua/pipesim/cp.lua): one CP rank's compute (every
-- layer on seq/cp tokens, the causal attention 1/cp of the whole), its
-- activations / cp, the KV exchange of each cp_comm_type against its
-- closed form on a mesh (p2p's exposed time when compute dominates and
-- when the link does; all_gather's and a2a's volumes), the gradient sync
-- over Megatron's dp-cp groups, Megatron's flags, and every bad input's
-- message. Runs under `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local parallel = require "pipesim.parallel"
local roofline = require "pipesim.models.roofline"
local cpar = require "pipesim.cp"

-- a GQA model, BF16, fused attention: s = 1024, b = 1, h = 512, 8 heads,
-- 4 KV heads of 64
local shape = { layers = 2, hidden = 512, heads = 8, kv_heads = 4, seq = 1024, vocab = 1024,
    microbatch = 1, dtype = "bf16", flash_attention = true, swiglu = true, ffn_hidden = 1536,
    position = "rope", norm = "rmsnorm", bias = false, dropout = false }
local layers = ps.models.transformer(shape)
local s = ps.models.formulas.normalize(shape)
local dev = ps.clusters.device("H100")
local e, d = 2, 64

local function attention(rf)
    for _, p in ipairs(rf.parts) do
        if p.name == "flash attention" then return p end
    end
end

-- compute: a block of one CP rank is the roofline of seq/cp tokens plus
-- cp - 1 more ring steps of its attention; its attention FLOPs are 1/cp
-- of the causal whole (each step pairs (s/cp)^2 / 2 query-key pairs)
for _, t in ipairs { 1, 2 } do
    for _, c in ipairs { 2, 4 } do
        local spec = { layers = layers, stages = 1, microbatches = 1, tp = t, cp = c }
        local plan = parallel.prepare(spec, dev, nil, nil)
        local blk = plan.layers[2]
        H.eq(blk.kind, "block")
        local ls = cpar.local_shape(s, c)
        H.eq(ls.seq, 1024 // c, "the local shape: seq / cp")
        local rf = roofline.block(ls, dev, { tp = t })
        local tf, tb = cpar.attention_parts(rf)
        H.near(blk.fwd_time, rf.fwd + (c - 1) * tf, 1e-12,
            string.format("forward = roofline(s/cp) + (cp-1) steps, tp %d cp %d", t, c))
        H.near(blk.bwd_input_time, rf.bwd_input + (c - 1) * tb, 1e-12, "input backward")
        H.near(blk.bwd_weight_time, rf.bwd_weight, 1e-12, "weight backward: s/cp tokens")
        local full = attention(roofline.block(s, dev, { tp = t }))
        H.near(c * attention(rf).flops, full.flops / c, 1e-12,
            string.format("attention FLOPs per rank = causal total / cp, cp %d", c))
        H.near(blk.fwd_flops, layers[2].fwd_flops / (t * c), 1e-12, "FLOPs / (tp cp)")
        H.near(blk.act_bytes, parallel.block_act_bytes(s, t, false, false) / c, 1e-12,
            "activations / cp")
        H.near(plan.layers[1].params, parallel.prepare({ layers = layers, stages = 1,
            microbatches = 1, tp = t }, dev, nil, nil).layers[1].params, 1e-12,
            "parameters are not split by cp")
    end
end

-- a shape changed in place between two lowerings is lowered anew: the
-- local shape of seq/cp tokens is a fresh copy, never a stale one kept
-- from the shape's earlier values
do
    local lay = ps.models.transformer(shape)
    local memo = {}
    local spec = { layers = lay, stages = 1, microbatches = 1, cp = 2 }
    parallel.prepare(spec, dev, nil, memo)
    local sh = lay[2].shape
    sh.microbatch = 2
    H.eq(cpar.local_shape(sh, 2).microbatch, 2, "the local shape follows the shape's values")
    local again = parallel.prepare(spec, dev, nil, memo)
    local wide = {}
    for k, v in pairs(shape) do wide[k] = v end
    wide.microbatch = 2
    local fresh = parallel.prepare({ layers = ps.models.transformer(wide), stages = 1,
        microbatches = 1, cp = 2 }, dev, nil, nil)
    H.near(again.layers[2].fwd_time, fresh.layers[2].fwd_time, 1e-12,
        "a shape changed in place: lowered as a fresh one")
end

-- the exchange on a mesh: sendrecv = alpha + T/beta, ring all-gather and
-- reduce-scatter of T = (N-1)(alpha + T/(N beta)), direct alltoall of a
-- rank's buffer T = alpha + T/(N beta)
local alpha = 3e-6
local function mesh(beta)
    return ps.cluster{ ranks = 16, device = dev, link = { bandwidth = beta, latency = alpha } }
end
local function run(cl, extra)
    local spec = { cluster = cl, layers = layers, stages = 1, microbatches = 2, record = "none" }
    for k, v in pairs(extra) do spec[k] = v end
    return ps.run(spec)
end
for _, t in ipairs { 1, 2 } do
    for _, c in ipairs { 2, 4, 8 } do
        local kv = 2 * e * (1024 // c) * (4 // t) * d -- local K and V
        local q = e * (1024 // c) * (8 // t) * d
        local rf = roofline.block(cpar.local_shape(s, c), dev, { tp = t })
        local tf, tb = cpar.attention_parts(rf)
        for _, beta in ipairs { 400e9, 1e8 } do
            local r = run(mesh(beta), { tp = t, cp = c })
            local s1, s2 = alpha + kv / beta, alpha + 2 * kv / beta
            local what = string.format(" (tp %d, cp %d, %g B/s)", t, c, beta)
            H.eq(r.cp, c); H.eq(r.cp_comm_type, "p2p")
            H.near(r.cp_comm.fwd, (c - 1) * s1, 1e-9, "p2p forward: cp-1 sends of KV" .. what)
            H.near(r.cp_comm.bwd, 2 * s1 + (c - 2) * s2, 1e-9,
                "p2p backward: KV, then KV+dKV, then dKV" .. what)
            local xf = (c - 1) * math.max(0, s1 - tf)
            local xb = 2 * math.max(0, s1 - tb) + (c - 2) * math.max(0, s2 - tb)
            H.near(r.cp_comm.exposed, xf + xb, 1e-9, "p2p exposed: what the steps cannot hide" ..
                what)
            if beta > 1e9 then
                H.eq(r.cp_comm.exposed, 0, "compute dominates: nothing exposed" .. what)
            else
                H.check(r.cp_comm.exposed > 0, "the link dominates: exposed" .. what)
            end
        end
        local cl = mesh(100e9)
        local beta = 100e9
        local ag = run(cl, { tp = t, cp = c, cp_comm_type = "all_gather" })
        local one = (c - 1) * (alpha + kv / 2 / beta) -- gathered K: c kv/2 bytes
        H.near(ag.cp_comm.fwd, 2 * one, 1e-9, "all_gather: K and V gathered, cp " .. c)
        H.near(ag.cp_comm.bwd, 4 * one, 1e-9, "backward: gathered again, dK dV reduce-scattered")
        H.near(ag.cp_comm.exposed, 6 * one, 1e-9, "all exposed")
        if (8 // t) % c == 0 and (4 // t) % c == 0 then
            local a2 = run(cl, { tp = t, cp = c, cp_comm_type = "a2a" })
            local function a2a(x) return alpha + x / (c * beta) end
            H.near(a2.cp_comm.fwd, 2 * a2a(q) + 2 * a2a(kv / 2), 1e-9, "a2a: Q, K, V and out, cp " ..
                c)
            H.near(a2.cp_comm.bwd, a2.cp_comm.fwd, 1e-9, "a2a backward: dout and dQ, dK, dV")
            H.near(a2.cp_comm.exposed, 2 * a2.cp_comm.fwd, 1e-9, "none hidden")
        end
    end
end
-- a2a+p2p: the a2a over the first level, the ring over the second
do
    local beta = 100e9
    local r = run(mesh(beta), { cp = 4, cp_comm_type = "a2a+p2p", cp_hierarchy = { 2, 2 } })
    local kv, q = 2 * e * 256 * 4 * d, e * 256 * 8 * d
    local function a2a(x) return alpha + x / (2 * beta) end
    H.near(r.cp_comm.fwd, 2 * a2a(q) + 2 * a2a(kv / 2) + (alpha + kv / beta), 1e-9,
        "a2a+p2p forward: a2a of Q, K, V, out on 2, one ring send on 2")
end

-- memory: the activations of one CP rank are 1/cp of cp = 1's; the static
-- memory the same plus the K/V buffers of the layer computing, by hand
-- from Transformer Engine's context_parallel.py (lua/pipesim/cp.lua
-- work_bytes): p2p's forward holds ring K/V buffers of the local K and
-- V's size, its backward two [2, kv] (4 kv); all_gather's backward the
-- gathered K, V and the whole sequence's dK, dV (2 cp kv). ZeRO-1 shards
-- the optimizer over dp x cp
do
    local cl = mesh(400e9)
    local base = run(cl, { microbatches = 1 })
    local function kv(c, t) return 2 * e * (1024 // c) * (4 // t) * d end
    for _, x in ipairs {
        { 2, 1, "p2p", 4 * kv(2, 1) }, { 4, 1, "p2p", 4 * kv(4, 1) },
        { 8, 1, "p2p", 8 * kv(8, 1) }, { 8, 2, "p2p", 8 * kv(8, 2) },
        { 2, 1, "all_gather", 2 * 2 * kv(2, 1) }, { 4, 2, "all_gather", 2 * 4 * kv(4, 2) },
        { 4, 1, "a2a", 0 },
    } do
        local c, t, ct, want = table.unpack(x)
        local b = t == 1 and base or run(cl, { microbatches = 1, tp = t })
        local r = run(cl, { microbatches = 1, cp = c, tp = t, cp_comm_type = ct })
        H.near(r.static_memory[1] - b.static_memory[1], want, 1e-12,
            string.format("K/V buffers, %s cp %d tp %d", ct, c, t))
    end
    H.near(cpar.work_bytes(s, e, { cp = 4, cp_comm = "a2a+p2p", cp_a2a = 2, cp_ring = 2, tp = 1 }),
        4 * kv(4, 1), 1e-12, "a2a+p2p: the ring's two [2, kv] backward buffers")
    for _, c in ipairs { 2, 4 } do
        local r = run(cl, { microbatches = 1, cp = c })
        H.near(r.static_memory[1], base.static_memory[1] + 4 * kv(c, 1), 1e-12,
            "static memory, cp " .. c)
        H.near(r.peak_memory[1] - r.static_memory[1],
            (base.peak_memory[1] - base.static_memory[1]) / c, 1e-12, "activations / cp, cp " .. c)
        local f1 = run(cl, { microbatches = 1, recompute = "full" })
        local fc = run(cl, { microbatches = 1, recompute = "full", cp = c })
        H.near(fc.peak_memory[1] - fc.static_memory[1],
            (f1.peak_memory[1] - f1.static_memory[1]) / c, 1e-12, "full recompute / cp")
    end
    local z1 = run(cl, { dp = 4, zero = 1 })
    local zc = run(cl, { dp = 2, cp = 2, zero = 1 })
    H.near(zc.static_memory[1], z1.static_memory[1] + 4 * kv(2, 1), 1e-12,
        "ZeRO-1 over dp 2 x cp 2 = over dp 4, and the K/V buffers")
end

-- the gradient sync runs over Megatron's dp-cp groups: a rank's
-- data-parallel group with context parallelism, ranks tp_rank + tp
-- (cp_rank + cp (dp_rank + dp pp_rank)) over cp and dp, cp fastest
-- (megatron/core/parallel_state.py, RankGenerator tp-cp-ep-dp-pp, core_v0.19.0)
local function megatron_dp_cp(tp, cp, dp, pp_rank)
    local g = {}
    for dr = 0, dp - 1 do
        for cr = 0, cp - 1 do g[#g + 1] = tp * (cr + cp * (dr + dp * pp_rank)) end
    end
    return g
end
-- (the transfers of the sync itself: tests/cli_cp.sh)
local node = ps.cluster(ps.clusters.dgx("H100", 4))
for _, k in ipairs { { 1, 2, 2, 2 }, { 2, 2, 2, 2 }, { 2, 4, 1, 2 }, { 4, 2, 2, 1 },
                     { 8, 2, 1, 2 }, { 1, 4, 4, 2 } } do
    local tp, cp, dp, pp = k[1], k[2], k[3], k[4]
    local what = string.format("tp %d cp %d dp %d pp %d", tp, cp, dp, pp)
    local L = ps.layout{ tp = tp, cp = cp, dp = dp, pp = pp }
    for pr = 0, pp - 1 do
        for tr = 0, tp - 1 do
            local want = megatron_dp_cp(tp, cp, dp, pr)
            for i = 1, #want do want[i] = want[i] + tr end
            H.eq(L.groups["dp-cp"][pr * tp + tr + 1], want, "ps.layout's dp-cp group, " .. what)
        end
    end
end

-- CP groups across nodes: tp 8 x cp 2 puts the CP pair on two nodes
do
    local L = ps.layout{ tp = 8, cp = 2, pp = 1, dp = 1 }
    H.eq(L.groups.cp[1], { 0, 8 }, "cp group of tp 8 x cp 2: ranks 0 and 8")
    local mha = ps.models.transformer{ layers = 1, hidden = 512, heads = 8, seq = 1024,
        vocab = 1024, dtype = "bf16", flash_attention = true }
    local r = ps.run{ cluster = node, layers = mha, stages = 1, microbatches = 1, tp = 8,
        cp = 2, record = "none" }
    local inside = ps.run{ cluster = node, layers = mha, stages = 1, microbatches = 1, tp = 4,
        cp = 2, record = "none" }
    H.check(r.cp_comm.fwd > inside.cp_comm.fwd * 4 / 2,
        "across nodes the KV send is NIC-bound: slower than half the NVLink send's time x 4")
end

-- Megatron's flags
do
    local base = { num_layers = 4, hidden_size = 512, num_attention_heads = 8,
        num_query_groups = 4, group_query_attention = true, seq_length = 1024, vocab_size = 1000,
        bf16 = true, micro_batch_size = 1, global_batch_size = 8, world_size = 8,
        tensor_model_parallel_size = 2, context_parallel_size = 2, cluster = node }
    local run_t = ps.models.megatron(base)
    H.eq(run_t.cp, 2); H.eq(run_t.dp, 2, "dp = world / (tp pp cp)")
    H.eq(run_t.microbatches, 4, "microbatches = gbs / (mbs dp)")
    local f = {}
    for k, v in pairs(base) do f[k] = v end
    f.cp_comm_type = { "a2a" }
    H.eq(ps.models.megatron(f).cp_comm_type, "a2a", "cp_comm_type: a one-element list")
    f.cp_comm_type = "a2a+p2p"
    H.raises(function() ps.models.megatron(f) end,
        "megatron: hierarchical_context_parallel_sizes must be set when cp_comm_type is 'a2a+p2p'")
    f.hierarchical_context_parallel_sizes = { 2, 1 }
    H.eq(ps.models.megatron(f).cp_hierarchy, { 2, 1 })
    f.cp_comm_type = { "p2p", "a2a" }
    H.raises(function() ps.models.megatron(f) end,
        "megatron: cp_comm_type differs between layers ('p2p' and 'a2a')")
    f.cp_comm_type, f.hierarchical_context_parallel_sizes = nil, nil
    f.world_size = 10
    H.raises(function() ps.models.megatron(f) end,
        "megatron: world_size (10) is not divisible by tensor_model_parallel_size (2) x " ..
        "pipeline_model_parallel_size (1) x context_parallel_size (2)")
    local r = ps.run(run_t)
    H.eq(r.cp, 2)
end

-- bad input, each message
local cl = mesh(400e9)
local plain = { { name = "l", fwd_flops = 1e9, bwd_flops = 2e9 } }
local function fails(extra, msg, what)
    H.raises(function() run(cl, extra) end, msg, what)
end
fails({ cp = 3 }, "cp = 3 needs the sequence length (1024) divisible by 2 x cp = 6 " ..
    "(Megatron's load-balanced causal split into 2 cp chunks)")
fails({ cp = 4, tp = 2, cp_comm_type = "a2a+p2p", cp_hierarchy = { 4, 1 } },
    "cp_comm_type \"a2a+p2p\" needs the heads (8) and kv_heads (4) divisible by tp x a2a size = 8")
fails({ cp = 4, tp = 2, cp_comm_type = "a2a" }, "cp_comm_type \"a2a\" needs the heads (8) and " ..
    "kv_heads (4) divisible by tp x cp = 8 (Transformer Engine: num_heads % cp_size == 0 for " ..
    "Q, K, V)")
fails({ cp = 2, cp_comm_type = "ring" }, "field 'cp_comm_type': unknown type 'ring' " ..
    "(expected p2p, all_gather, a2a or a2a+p2p)")
fails({ cp_comm_type = "p2p" }, "field 'cp_comm_type' needs cp > 1 (got cp = 1)")
fails({ cp = 2, cp_hierarchy = { 1, 2 } }, "field 'cp_hierarchy' needs cp_comm_type = " ..
    "\"a2a+p2p\" (got \"p2p\")")
fails({ cp = 4, cp_comm_type = "a2a+p2p" }, "field 'cp_hierarchy' must be { a2a size, p2p " ..
    "size } (two integers >= 1) with cp_comm_type = \"a2a+p2p\", got nil")
fails({ cp = 4, cp_comm_type = "a2a+p2p", cp_hierarchy = { 2, 3 } },
    "field 'cp_hierarchy': 2 x 3 is not cp = 4")
fails({ cp = 2, tp = 8, dp = 2 }, "tp 8 x cp 2 x stages 1 x dp 2 need 32 ranks but the " ..
    "cluster has 16")
fails({ cp = 0 }, "field 'cp'")
-- a ranks list of the wrong length names the layout it must cover (one
-- message for every layout, core/bind/run.c)
fails({ cp = 2, ranks = { 0 } }, "ps.run: field 'ranks' must list 2 cluster ranks (tp 1 x cp 2 " ..
    "x stages 1 x dp 1, TP rank innermost), got 1")
fails({ dp = 2, ranks = { 0 } }, "ps.run: field 'ranks' must list 2 cluster ranks (one per " ..
    "stage of every replica), got 1")
fails({ ranks = { 0, 1 } }, "ps.run: field 'ranks' must list 1 cluster ranks (one per stage), " ..
    "got 2")
fails({ cp = 2, layers = plain }, "layers[1]: cp = 2 needs model layers (ps.models.*, with a " ..
    "shape); a plain layer cannot be split")
fails({ cp = 2, tp = 8, sequence_parallel = true, layers = ps.models.transformer(
    { layers = 1, hidden = 512, heads = 8, seq = 24, vocab = 64, flash_attention = true }) },
    "sequence_parallel needs the sequence on one CP rank (24 / cp 2 = 12) divisible by tp = 8")
local unfused = ps.models.transformer{ layers = 1, hidden = 512, heads = 8, seq = 1024,
    vocab = 64, flash_attention = false }
fails({ cp = 2, layers = unfused }, "layers[1]: cp = 2 needs fused attention (the shape's " ..
    "flash_attention): Megatron-Core runs context parallelism in Transformer Engine's " ..
    "attention only")
H.raises(function()
    ps.run{ layers = layers, stages = 1, microbatches = 1, cp = 2 }
end, "cp = 2 needs the roofline compute model")
-- an MLA block is priced by models/moe.lua's block_cost, which does not
-- give the attention parts cp.lua splits
local mla = ps.models.transformer{ layers = 1, hidden = 512, heads = 8, seq = 1024, vocab = 64,
    flash_attention = true, multi_latent_attention = true, kv_lora_rank = 64, qk_head_dim = 64,
    qk_pos_emb_head_dim = 32, v_head_dim = 64 }
fails({ cp = 2, layers = mla }, "layer 'block 0': cp = 2 with multi-latent attention blocks is " ..
    "not modelled")
local moe = ps.models.transformer{ layers = 1, hidden = 512, heads = 8, seq = 1024, vocab = 64,
    flash_attention = true, experts = 4, topk = 2, expert_ffn = 256 }
fails({ cp = 2, layers = moe }, "layer 'block 0': cp = 2 with MoE blocks is not modelled")

H.done()
