-- Expert parallelism in the step (issue 24, the parallel side; core/par/ep.c,
-- lua/pipesim/expert.lua): each MoE layer's dispatch and combine as
-- all-to-alls of the EP group on the network, their time against the
-- closed form on dedicated links, DualPipe's overlapped pairs against
-- 1F1B, the imbalance, the lowering of a MoE block from moe.block_cost (a
-- stub of MOE_INTERFACE's function here), and the messages for bad input.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local alpha, beta = 1e-3, 1e9 -- 1 ms, 1 GB/s per direction

-- A plain MoE layer: 1 s forward (0.3 before the dispatch, 0.5 of
-- experts), 2 s backward (0.2 before the combine's gradient, 1 of
-- experts), B bytes sent by each rank in each all-to-all.
local function moe_layer(B)
    return { fwd_time = 1, bwd_time = 2, moe_dispatch_bytes = B, moe_combine_bytes = B,
             moe_fwd_pre_time = 0.3, moe_fwd_expert_time = 0.5, moe_bwd_pre_time = 0.2,
             moe_bwd_expert_time = 1 }
end

-- 1. One node, dedicated links (a mesh): an all-to-all of B bytes per rank
-- over ep ranks sends B / (ep - 1) to each peer at once on its own link,
-- so it takes alpha + B / ((ep - 1) beta); a layer has four (dispatch and
-- combine, forward and backward), and the step waits for all of them.
do
    local B = 3e6
    for _, ep in ipairs { 2, 4 } do
        local base = { cluster = F.mesh(4, beta, alpha), layers = { moe_layer(B) }, stages = 1,
                       dp = 4, microbatches = 1, record = "none" }
        local r = ps.run(F.with(base, { ep = ep }))
        local a2a = alpha + B / ((ep - 1) * beta)
        H.near(r.makespan, 3 + 4 * a2a, 1e-12, "ep " .. ep .. ": step = compute + 4 all-to-alls")
        for k = 1, 4 do
            H.near(r.exposed_a2a[k], 4 * a2a, 1e-9, "ep " .. ep .. ": rank waits on all four")
            H.eq(r.exposed_a2a_overlapped[k], 0, "no overlapped pair in 1F1B")
        end
        H.eq(r.ep, ep, "r.ep")
        H.eq(r.moe.routing:sub(1, 5), "even:", "even routing said in the result")
    end
    -- volume: per rank per microbatch tokens x topk x hidden x bytes x
    -- (ep - 1) / ep under even routing; DeepSeek-V3's figures, 4 ranks:
    -- each peer's flow is a quarter of the tokens' copies
    local tokens, topk, hidden = 4096, 8, 7168
    local Bd = tokens * topk * hidden * 1 * 3 / 4 -- FP8 dispatch
    local r = ps.run{ cluster = F.mesh(4, beta, 0), layers = { moe_layer(Bd) }, stages = 1,
                      dp = 4, ep = 4, microbatches = 1, record = "none" }
    H.near(r.exposed_a2a[1], 4 * (tokens * topk * hidden / 4) / beta, 1e-12,
        "each peer gets tokens x topk x hidden / ep bytes")
    -- more microbatches: every one pays its own
    local m4 = ps.run{ cluster = F.mesh(4, beta, alpha), layers = { moe_layer(B) }, stages = 1,
                       dp = 4, ep = 4, microbatches = 4, record = "none" }
    H.near(m4.exposed_a2a[1], 16 * (alpha + B / (3 * beta)), 1e-9, "4 microbatches: 16 all-to-alls")
    -- the backward's own bytes (FP8 combine gradient, say): the combine's
    -- gradient goes the dispatch way with moe_dispatch_grad_bytes
    local g = ps.run{ cluster = F.mesh(4, beta, alpha), stages = 1, dp = 4, ep = 4,
                      microbatches = 1, record = "none",
                      layers = { F.with(moe_layer(B), { moe_dispatch_grad_bytes = B / 2,
                                                        moe_combine_grad_bytes = 2 * B }) } }
    H.near(g.exposed_a2a[1], 4 * alpha + (B + B + B / 2 + 2 * B) / (3 * beta), 1e-9,
        "backward all-to-alls at their own bytes")
    -- ep = 1: no all-to-all, the layer as a dense one
    local one = ps.run{ cluster = F.mesh(4, beta, alpha), layers = { moe_layer(B) }, stages = 1,
                        dp = 4, microbatches = 1, record = "none" }
    H.near(one.makespan, 3, 1e-12, "ep = 1: no all-to-all")
end

-- 2. Contention: on a cluster whose node has one NIC for its GPUs the
-- all-to-all across two nodes shares it, so it takes longer than on
-- dedicated links with the same figures.
do
    local B = 8e7
    local two = ps.cluster{ nodes = 2, gpus_per_node = 2, nics_per_node = 1,
        intra = { bandwidth = beta, latency = 0 }, inter = { bandwidth = beta, latency = 0 } }
    local base = { layers = { moe_layer(B) }, stages = 1, dp = 4, ep = 4, microbatches = 1,
                   record = "none" }
    local shared = ps.run(F.with(base, { cluster = two }))
    local mesh = ps.run(F.with(base, { cluster = F.mesh(4, beta, 0) }))
    H.check(shared.exposed_a2a[1] > mesh.exposed_a2a[1] * 1.5,
        "a shared NIC slows the all-to-all: " .. shared.exposed_a2a[1] .. " vs " ..
        mesh.exposed_a2a[1])
end

-- 3. DualPipe pairs one microbatch's forward with another's backward: the
-- pair's all-to-alls run beside its compute, so less is exposed than under
-- 1F1B on the same run, and nothing at the pairs when their compute
-- exceeds their all-to-alls; a pair whose all-to-alls exceed its compute
-- waits for the rest.
do
    local function run(schedule, B, share)
        local layers = {}
        for i = 1, 8 do layers[i] = moe_layer(B) end
        return ps.run{ cluster = F.mesh(8, beta, 1e-5), layers = layers, stages = 4, dp = 2,
                       ep = 2, microbatches = 8, schedule = schedule, record = "none",
                       ep_comm_share = share }
    end
    local small = 1e8 -- 0.1 s per all-to-all: a pair's 1.6 s against its 6 s
    local f1, dpipe = run("1f1b", small), run("dualpipe", small)
    H.check(F.sum(dpipe.exposed_a2a) < F.sum(f1.exposed_a2a),
        "dualpipe exposes less all-to-all than 1f1b")
    H.near(F.sum(f1.exposed_a2a) / 8, 8 * 2 * 4 * (1e-5 + small / beta), 1e-9,
        "1f1b: every all-to-all exposed (8 microbatches x 2 layers x 4)")
    H.eq(F.max(dpipe.exposed_a2a_overlapped), 0, "pairs: compute exceeds the all-to-alls")
    H.check(F.max(dpipe.exposed_a2a) > 0, "the unpaired warm-up and cool-down still wait")
    local big = run("dualpipe", 2e9) -- 2 s each: 32 s a pair against 6 s
    H.check(F.max(big.exposed_a2a_overlapped) > 0, "pairs wait when all-to-alls exceed compute")
    -- the SMs the communication takes slow the overlapped compute
    local free = run("dualpipe", small, 0)
    H.check(free.makespan < dpipe.makespan, "no SM share: faster pairs")
end

-- 4. The lowering of a MoE block: moe.block_cost (MOE_INTERFACE), a stub
-- here with the interface's fields, linear in the imbalance, records the
-- arguments it was called with.
local calls = {}
local function stub_cost(shape, par)
    calls[#calls + 1] = par
    local tokens = shape.seq * shape.microbatch
    local bytes = tokens * shape.topk * shape.hidden * 2 * (par.ep - 1) / par.ep
    return { attn_fwd_time = 0.2, attn_bwd_time = 0.4, router_fwd_time = 0.01,
             router_bwd_time = 0.02, permute_fwd_time = 0.02, permute_bwd_time = 0.04,
             expert_fwd_time = 0.3 * par.imbalance, expert_bwd_time = 0.6 * par.imbalance,
             shared_fwd_time = 0.05, shared_bwd_time = 0.1, dispatch_bytes = bytes,
             combine_bytes = bytes, dispatch_grad_bytes = bytes, combine_grad_bytes = bytes,
             dense_params = 0, expert_params = 0, act_bytes = 1e6,
             tokens_per_expert = tokens * shape.topk / shape.experts * par.imbalance }
end
local moe_model = require "pipesim.models.moe"
local real_cost = moe_model.block_cost
moe_model.block_cost = stub_cost
do
    local m = ps.models.transformer{ layers = 2, hidden = 1024, heads = 8, seq = 1024,
                                     vocab = 1024, microbatch = 1, experts = 8, topk = 2 }
    local blocks = {}
    for _, l in ipairs(m) do
        if l.kind == "block" then blocks[#blocks + 1] = l end
    end
    H.eq(#blocks, 2, "two MoE blocks"); H.eq(blocks[1].moe, true, "marked moe")
    local cl = ps.cluster{ ranks = 4, device = ps.clusters.device("H100"),
                           link = { bandwidth = beta, latency = alpha } }
    local base = { cluster = cl, layers = blocks, stages = 1, dp = 4, ep = 4, microbatches = 2,
                   record = "none" }
    local r1 = ps.run(base)
    H.eq(calls[#calls].ep, 4, "block_cost gets ep"); H.eq(calls[#calls].imbalance, 1, "and 1")
    local r2 = ps.run(F.with(base, { moe_imbalance = 2 }))
    H.eq(calls[#calls].imbalance, 2, "block_cost gets the imbalance")
    -- twice the expert time on the slowest rank, and the step waits for
    -- it: 2 microbatches x 2 blocks x (0.3 + 0.6) more
    H.near(r2.makespan - r1.makespan, 2 * 2 * 0.9, 1e-9, "moe_imbalance = 2: expert time x 2")
    H.near(r2.exposed_a2a[1], r1.exposed_a2a[1], 1e-9, "the same all-to-alls")
    local bytes = 1024 * 2 * 1024 * 2 * 3 / 4
    H.near(r1.exposed_a2a[1], 2 * 2 * 4 * (alpha + bytes / 3 / beta), 1e-9,
        "the block's bytes from block_cost: 4 all-to-alls per block and microbatch")
    H.eq(r2.moe.imbalance, 2, "r.moe.imbalance")
    -- Megatron's allgather dispatcher: each rank's 1024 tokens' hidden
    -- states, routing map and probabilities all-gathered over the EP group,
    -- the output reduce-scattered back; the backward mirrors them (the
    -- probabilities' gradient with the hidden one); each share to each of
    -- the 3 peers at once
    local ag = ps.run(F.with(base, { moe_dispatcher = "allgather" }))
    local T, h, E = 1024, 1024, 8
    local shares = { T * (h * 2 + E * 3), T * h * 2, T * h * 2, T * (h + E) * 2 }
    local want = 0
    for _, b in ipairs(shares) do want = want + alpha + b / beta end
    H.near(ag.exposed_a2a[1], 2 * 2 * want, 1e-9, "allgather: its four exchanges' closed form")
    H.eq(ag.moe.dispatcher, "allgather", "r.moe.dispatcher")
    H.raises(function() ps.run(F.with(base, { moe_dispatcher = "allgather", etp = 2 })) end,
        "ps.run: field 'moe_dispatcher': allgather with etp = 2 is not modelled (etp = 1 only)")
    H.check(r2.moe.routing:find("2 x the mean", 1, true) ~= nil, "skewed load said")
    H.raises(function() ps.run(F.with(base, { ep = 3, dp = 3, cluster = ps.cluster{ ranks = 3,
        device = ps.clusters.device("H100"), link = { bandwidth = beta } } })) end,
        "ps.run: ep = 3 does not divide the model's 8 experts (layers[1])")
end
moe_model.block_cost = real_cost

-- 4b. ps.models.megatron's MoE flags reach ps.run: Megatron's default
-- dispatcher (allgather) runs, and at top-2 over 4 ranks it moves more
-- than the all-to-all
do
    local spec0 = { num_layers = 4, hidden_size = 1024,
        num_attention_heads = 8, seq_length = 1024, vocab_size = 1000, num_experts = 8,
        moe_router_topk = 2, expert_model_parallel_size = 4, world_size = 8,
        micro_batch_size = 1, global_batch_size = 16, pipeline_model_parallel_size = 2,
        bf16 = true }
    local spec = ps.models.megatron(spec0)
    spec.cluster, spec.record = ps.cluster(ps.clusters.dgx("H100", 1)), "none"
    local ag = ps.run(spec)
    H.eq({ ag.moe.dispatcher, ag.ep }, { "allgather", 4 }, "Megatron's default dispatcher, ep 4")
    local a2a = ps.run(F.with(spec, { moe_dispatcher = "alltoall" }))
    H.check(ag.exposed_a2a[1] > a2a.exposed_a2a[1], "allgather moves more than the all-to-all")
    -- the flex dispatcher and its backend (DeepEP or HybridEP, costed alike)
    local fl = ps.models.megatron(F.with(spec0, { moe_token_dispatcher_type = "flex",
        moe_flex_dispatcher_backend = "hybridep" }))
    H.eq(fl.moe_dispatcher, "flex", "megatron: flex with the hybridep backend")
    H.raises(function() ps.models.megatron(F.with(spec0, { moe_flex_dispatcher_backend =
        "hybridep" })) end, "megatron: moe_flex_dispatcher_backend 'hybridep' needs " ..
        "moe_token_dispatcher_type 'flex' (it changes nothing otherwise)")
end

-- 4c. The flex dispatcher (models/moe_flex.lua, core/par/ep.c pair_bytes):
-- a rank sends its share to each peer on its node (NVLink) and to the
-- peer of its local index on each other node (RDMA), nothing to the rest.
-- Two nodes of two GPUs, NVLink at nb, one NIC a GPU at beta: each
-- exchange takes its tier's latency plus the slower of its two flows.
do
    local function cl(nb)
        return ps.cluster{ nodes = 2, gpus_per_node = 2, nics_per_node = 2,
            intra = { bandwidth = nb, latency = alpha }, inter = { bandwidth = beta, latency = alpha } }
    end
    local B = 3e6
    for _, c in ipairs { { 4 * beta, 0.25, 0.75 }, { beta / 2, 0.9, 0.1 } } do
        local nb, nvl, rdma = table.unpack(c)
        local l = F.with(moe_layer(B), { moe_flex_nvl_share = nvl, moe_flex_rdma_share = rdma })
        local r = ps.run{ cluster = cl(nb), layers = { l }, stages = 1, dp = 4, ep = 4,
                          microbatches = 1, record = "none", moe_dispatcher = "flex" }
        local a2a = alpha + math.max(B * nvl / nb, B * rdma / beta)
        for k = 1, 4 do
            H.near(r.exposed_a2a[k], 4 * a2a, 1e-9, string.format("flex %g/%g: rank %d's four " ..
                "exchanges, each the slower of its NVLink and RDMA flows", nvl, rdma, k - 1))
        end
    end
    -- the chance a token's top-k reaches X experts (a GPU's, a node's):
    -- 1 - C(E - X, k) / C(E, k); group-limited (g groups, m picked): a
    -- GPU inside a group m/g (1 - C(m E/g - X, k) / C(m E/g, k)); a node
    -- of q whole groups 1 - sum_j P(j of them picked) C((m - j) E/g, k) /
    -- C(m E/g, k)
    local flex = require "pipesim.models.moe_flex"
    H.near(flex.hit(4, 2, 1), 1 / 2, 1e-15, "E 4, top-2, one expert")
    H.near(flex.hit(4, 2, 2), 5 / 6, 1e-15, "E 4, top-2, two experts")
    H.near(flex.hit(8, 2, 1, 4, 2), 1 / 4, 1e-15, "group-limited: a GPU gets k / E of the tokens")
    H.near(flex.hit(8, 2, 4, 4, 2), 13 / 18, 1e-15, "group-limited: a node of two groups")
    -- a model's block lowered: 8 experts, top-2, ep 4 on 2 x 2 GPUs, so 2
    -- a GPU and 4 a node: p_gpu = 1 - C(6,2)/C(8,2) = 13/28, p_node = 1 -
    -- C(4,2)/C(8,2) = 22/28; a rank of Tr = 1024 tokens sends each NVLink
    -- peer its own and the other node's forwarded ones, 2 Tr 13/28, and
    -- the RDMA peer Tr 22/28, all at h = 1024 in BF16
    local model = ps.models.transformer{ layers = 2, hidden = 1024, heads = 8, seq = 1024,
        vocab = 1000, experts = 8, topk = 2, expert_ffn = 512 }
    local o = { tp = 1, ep = 4, dispatcher = "flex", flex = { G = 2, N = 2 }, imbalance = 1 }
    local out = require("pipesim.expert").lower_block(model[2], o,
        ps.clusters.device("H100"), { fwd = 0, bwd = 0 }, 2)
    local Tr, nvl, rdma = 1024, 2 * 1024 * 13 / 28, 1024 * 22 / 28
    H.near(out.moe_dispatch_bytes, (nvl + rdma) * 1024 * 2, 1e-12, "flex dispatch bytes")
    H.near(out.moe_combine_grad_bytes, (nvl + rdma) * 1024 * 2, 1e-12, "flex combine-grad bytes")
    H.near(out.moe_flex_nvl_share, nvl / (nvl + rdma), 1e-12, "NVLink peer's share")
    H.near(out.moe_flex_rdma_share, rdma / (nvl + rdma), 1e-12, "RDMA peer's share")
    H.check(Tr * 22 / 28 < Tr * 2 / 4 * 2, "fewer tokens cross the NICs than the all-to-all's")
    -- on a cluster, DeepEP's achieved rates (moe_flex.DEEPEP): on Hopper
    -- the NVLink peers' bytes grow by G nvl_bw / ((G - 1) 140 GB/s), here
    -- 2 x 370 / 140 (DGX H100's NVLink at NCCL's 370 GB/s), the RDMA
    -- peer's by 50 / 44; the forward pays layout + notify, 155 us, once
    local hcl = ps.cluster(ps.clusters.dgx("H100", 2, { gpus_per_node = 2, nics_per_node = 2 }))
    local lay = flex.layout({ { 0, 1, 2, 3 } }, 2, hcl)
    H.eq(lay.G .. "x" .. lay.N .. " " .. tostring(lay.hopper), "2x2 true", "H100 layout")
    H.near(lay.nvl_bw, 370e9, 1e-12, "NVLink path's rate")
    H.near(lay.rdma_bw, 50e9, 1e-12, "RDMA path's rate")
    local slow = require("pipesim.expert").lower_block(model[2], F.with(o, { flex = lay }),
        ps.clusters.device("H100"), { fwd = 0, bwd = 0 }, 2)
    H.near(slow.moe_flex_nvl_share, nvl / (nvl + rdma) * 2 * 370 / 140, 1e-12,
        "NVLink share at DeepEP's forwarding rate")
    H.near(slow.moe_flex_rdma_share, rdma / (nvl + rdma) * 50 / 44, 1e-12,
        "RDMA share at DeepEP's efficiency")
    H.near(slow.moe_dispatch_bytes, out.moe_dispatch_bytes, 1e-15, "the bytes themselves unchanged")
    local a2a = require("pipesim.expert").lower_block(model[2], F.with(o, { dispatcher =
        "alltoall", flex = false }), ps.clusters.device("H100"), { fwd = 0, bwd = 0 }, 2)
    H.near(slow.fwd_time - a2a.fwd_time, 155e-6, 1e-9, "layout + notify in the forward")
    H.near(slow.moe_fwd_pre_time - a2a.moe_fwd_pre_time, 155e-6, 1e-9,
        "layout + notify before the dispatch")
    H.near(slow.bwd_time, a2a.bwd_time, 1e-15, "the backward reuses the handle")
    -- not Hopper (B200): the NVLink hop at the link's rate, the RDMA one at
    -- DeepEP's efficiency; one node: both at the links' rates
    local blay = flex.layout({ { 0, 1, 2, 3 } }, 2,
        ps.cluster(ps.clusters.dgx("B200", 2, { gpus_per_node = 2, nics_per_node = 2 })))
    H.eq(table.concat({ flex.slowdown(blay) }, " "), "1 " .. 50 / 44, "B200's factors")
    local one = flex.layout({ { 0, 1 } }, 2, hcl)
    H.eq(table.concat({ flex.slowdown(one) }, " "), "1 1", "one node: the intranode kernels")
    -- end to end on the nodes, and what refuses it
    local spec = { cluster = ps.cluster(ps.clusters.dgx("H100", 2, { gpus_per_node = 2,
        nics_per_node = 2 })), layers = model, stages = 1, dp = 4, ep = 4,
        microbatches = 1, record = "none", moe_dispatcher = "flex" }
    local r = ps.run(spec)
    H.eq(r.moe.dispatcher, "flex", "r.moe.dispatcher")
    H.check(r.exposed_a2a[1] > 0, "flex's exchanges waited for")
    H.raises(function() ps.run(F.with(spec, { moe_imbalance = 2 })) end,
        "ps.run: field 'moe_imbalance': 2 with the flex dispatcher is not modelled (even routing " ..
        "only)")
    H.raises(function() ps.run(F.with(spec, { ep = 2, etp = 2 })) end,
        "ps.run: field 'moe_dispatcher': flex with etp = 2 is not modelled (etp = 1 only; etp " ..
        "defaults to tp)")
    H.raises(function() ps.run(F.with(spec, { dp = 6, ep = 3,
        layers = ps.models.transformer{ layers = 2, hidden = 1024, heads = 8, seq = 1024,
            vocab = 1000, experts = 6, topk = 2, expert_ffn = 512 },
        cluster = ps.cluster(ps.clusters.dgx("H100", 3, { gpus_per_node = 2,
            nics_per_node = 2 })) })) end,
        "ps.run: field 'moe_dispatcher': flex needs each node of an expert-parallel group to " ..
        "hold its ranks at the same local GPU indices (the RDMA hop goes to the sender's " ..
        "index); the group of ranks 0.. has 2 on node 0 and 1 on node 1")
    H.raises(function() ps.run(F.with(spec, { layers = ps.models.transformer{ layers = 2,
        hidden = 1024, heads = 8, seq = 1024, vocab = 1000, experts = 8, topk = 2,
        expert_ffn = 512, capacity_factor = 1 } })) end,
        "ps.run: layers[2]: a capacity factor needs the alltoall dispatcher (Megatron's " ..
        "moe_expert_capacity_factor), not flex")
end

-- 4d. Expert tensor parallelism (expert.etp_comm): Megatron's alltoall
-- dispatcher all-gathers over the ETP group the tokens its all-to-all
-- brought and reduce-scatters the experts' output back; each direction
-- runs both. 8 experts, top-2, tp = etp = 2 (sequence parallel), ep = 2:
-- a rank routes Tr = 1024 / 2 = 512 tokens, S = 1024 copies; each local
-- expert runs m = ep etp S / E = 512, the rank's 4 experts R = 2048, the
-- buffer R h e = 2048 x 1024 x 2 bytes, of which a rank sends (etp - 1) /
-- etp in each. Costed on the first ETP group, ranks 0 and 1, as the TP
-- collectives are: with a cost of 1 s a GB, AG + RS = 2 buf / 1e9 more
-- in each of the experts' forward and backward pieces.
do
    local model = ps.models.transformer{ layers = 2, hidden = 1024, heads = 8, seq = 1024,
        vocab = 1000, experts = 8, topk = 2, expert_ffn = 512 }
    local dev = ps.clusters.device("H100")
    local buf = 4 * 512 * 1024 * 2
    local seen_calls = {}
    local function cost(op, bytes, ranks)
        seen_calls[#seen_calls + 1] = { op, bytes, table.concat(ranks, ",") }
        return bytes / 1e9
    end
    local spec = { layers = model, stages = 1, dp = 4, tp = 2, ep = 2, etp = 2,
                   sequence_parallel = true }
    local plan = require("pipesim.parallel").prepare(spec, dev, cost)
    local l = plan.layers[2]
    local c = require("pipesim.models.moe").block_cost(model[2].shape, { device = dev, tp = 2,
        etp = 2, ep = 2, sp = true })
    H.eq(c.tokens_per_expert * 4 * 1024 * 2, buf, "the gathered buffer: R h e")
    H.near(l.moe_fwd_expert_time, c.expert_fwd_time + 2 * buf / 1e9, 1e-12,
        "etp 2: the experts' forward piece + all-gather + reduce-scatter")
    H.near(l.moe_bwd_expert_time, c.expert_bwd_time + 2 * buf / 1e9, 1e-12,
        "etp 2: the experts' backward piece + their gradients' collectives")
    H.eq(l.moe_figures.etp_comm_bytes, buf / 2, "a rank sends (etp - 1) / etp of the buffer")
    local seen, set = {}, {}
    for _, x in ipairs(seen_calls) do
        local k = x[1] .. " " .. x[3]
        if x[2] == buf and not set[k] then set[k] = true; seen[#seen + 1] = k end
    end
    table.sort(seen)
    H.eq(seen, { "allgather 0,1", "reduce_scatter 0,1" }, "on the first ETP group's ranks")
    -- etp 1: no collective around the experts
    local p1 = require("pipesim.parallel").prepare(F.with(spec, { etp = 1 }), dev, cost)
    H.eq(p1.layers[2].moe_figures.etp_comm_bytes, 0, "etp 1: none")
    -- and a step runs with them on a DGX node
    local r = ps.run(F.with(spec, { cluster = ps.cluster(ps.clusters.dgx("H100", 1)),
        microbatches = 2, record = "none" }))
    -- 4 simulated instances (dp 4), each standing for its ETP group; one
    -- stage, so every idle moment is a wait: on the all-to-alls or on the
    -- gradient sync
    H.eq(r.moe.etp, 2, "a step at etp 2")
    H.eq(r.stands_for, { { 0, 1 }, { 2, 3 }, { 4, 5 }, { 6, 7 } }, "etp 2: pairs")
    for i = 1, 4 do
        H.near(r.stage_bubble[i] * r.makespan, r.exposed_a2a[i] + r.exposed_comm[i], 1e-9,
            "rank " .. r.rank[i] .. ": idle = waited")
    end
end

-- 5. Bad input, each message.
do
    local base = { cluster = F.mesh(8, beta, alpha), layers = { moe_layer(1e6) }, stages = 1,
                   dp = 8, microbatches = 1, record = "none" }
    H.raises(function() ps.run(F.with(base, { ep = 3 })) end,
        "ps.run: etp 1 x ep 3 x pp 1 (3 ranks) does not divide the world of 8 ranks")
    H.raises(function() ps.run(F.with(base, { ep = 4, etp = 4 })) end,
        "ps.run: etp 4 x ep 4 x pp 1 (16 ranks) does not divide the world of 8 ranks")
    H.raises(function() ps.run(F.with(base, { ep = 0 })) end, "ep")
    H.raises(function() ps.run(F.with(base, { ep = 2, layers = { { fwd_time = 1 } } })) end,
        "ps.run: field 'ep' = 2 needs MoE layers (ps.models with experts, or layers with " ..
        "moe_dispatch_bytes); this model has none")
    H.raises(function() ps.run(F.with(base, { moe_imbalance = 0.5 })) end,
        "ps.run: field 'moe_imbalance' must be a number >= 1 (the most loaded expert's tokens " ..
        "over the mean), got 0.5")
    H.raises(function() ps.run(F.with(base, { moe_dispatcher = "a2a" })) end,
        "ps.run: field 'moe_dispatcher': unknown dispatcher 'a2a' (expected alltoall, " ..
        "allgather or flex)")
    H.raises(function() ps.run(F.with(base, { ep = 2, moe_dispatcher = "flex" })) end,
        "ps.run: field 'moe_dispatcher': flex needs a cluster of nodes (nodes, gpus_per_node: " ..
        "NVLink inside a node, RDMA across), not a mesh of links")
    H.raises(function() ps.run(F.with(base, { moe_imbalance = 2,
        layers = { { fwd_time = 1 } } })) end,
        "ps.run: field 'moe_imbalance' needs MoE layers")
    H.raises(function() ps.run(F.with(base, { ep = 2, ep_comm_share = 1 })) end,
        "field 'ep_comm_share' must be below 1")
    -- a hand-edited model shape: a message, not arithmetic on nil inside
    -- models/moe.lua or mla.lua (test_front_fuzz found the MLA one)
    local mm = ps.models.transformer{ layers = 1, hidden = 64, heads = 4, seq = 32, vocab = 100,
                                      experts = 4 }
    local h100 = ps.cluster{ ranks = 1, device = ps.clusters.device("H100") }
    local function shaped(i, f)
        return { cluster = h100, layers = { F.with(mm[i], { shape = F.with(mm[i].shape, f) }) },
                 stages = 1, microbatches = 1, record = "none" }
    end
    H.eq(mm[2].moe, true, "block 0 is a MoE block")
    H.raises(function() ps.run(shaped(2, { topk = 0 })) end,
        "ps.run: layers[1].shape.topk must be a positive integer (ps.models fills it), got 0")
    H.raises(function() ps.run(shaped(2, { capacity_factor = -1 })) end,
        "ps.run: layers[1].shape.capacity_factor must be a number > 0 (ps.models fills it), got -1")
    H.raises(function() ps.run(shaped(1, { multi_latent_attention = 1 })) end,
        "ps.run: layers[1].shape.multi_latent_attention must be a boolean (ps.models fills it), " ..
        "got 1")
    H.raises(function() ps.run(shaped(2, { multi_latent_attention = true })) end,
        "ps.run: layers[1].shape.kv_lora_rank must be a positive integer (ps.models fills it), " ..
        "got nil")
end

-- 6. The folded groups: ps.layout's expert side is Megatron's (tested
-- group by group in test_layout.lua); a run's EP groups are those: with
-- tp = 2 and etp = 1 an EP group spans TP ranks, so every TP rank runs.
do
    local L = ps.layout{ tp = 2, ep = 4, etp = 1, dp = 2, pp = 1 }
    H.eq(L.groups.ep, { { 0, 1, 2, 3 } }, "etp 1: the EP group crosses the TP pair")
    H.eq(L.groups.edp, { { 0 }, { 1 }, { 2 }, { 3 } }, "expert-DP: world / (etp ep pp) = 1")
end

-- 7. The experts' gradients sync over the expert data-parallel group,
-- beside the dense sync over dp: 4 ranks, ep 2, so expert-DP groups {0, 2}
-- and {1, 3} (world / (etp ep pp) = 2) against the dense ring over all 4.
-- On a mesh the two rings use other links and run at once after the
-- backward; the optimizer step waits for both.
do
    local P, E = 1e6, 2e8 -- parameters of the layer, of which the experts'
    local layer = { fwd_time = 1, bwd_time = 2, params = P + E, moe_expert_params = E,
                    moe_dispatch_bytes = 0, moe_combine_bytes = 0 }
    local base = { cluster = F.mesh(4, beta, alpha), layers = { layer }, stages = 1, dp = 4,
                   microbatches = 1, record = "none",
                   grad_sync = { algorithm = "ring", overlap = false, bucket = "10 GB",
                                 first_bucket = "10 GB" } }
    local function ring(n, bytes) return 2 * (n - 1) * (alpha + bytes / (n * beta)) end
    local r = ps.run(F.with(base, { ep = 2 }))
    local dense, expert = ring(4, 2 * P), ring(2, 2 * E)
    H.near(r.makespan, 3 + math.max(dense, expert), 1e-12,
        "step = compute + the longer of the two syncs")
    H.near(r.exposed_comm[1], math.max(dense, expert), 1e-9, "the wait is the gradient sync's")
    local one = ps.run(base) -- ep = 1: the experts in the dense ring
    H.near(one.makespan, 3 + ring(4, 2 * (P + E)), 1e-12, "ep = 1: one ring over dp")
    -- the distributed optimizer shards the experts' state over expert-DP;
    -- the dense bucket's end is padded to a multiple of lcm(4, 128) = 128
    -- elements, held in the gradient and parameter buffers (par/dp.c
    -- stage_pad): 10^6 -> 1,000,064, 64 x (2 + 2) bytes
    local z = ps.run(F.with(base, { ep = 2, zero = 1 }))
    local pad = math.ceil(P / 128) * 128 - P
    H.near(z.static_memory[1], (P * (2 + 2 + 12 / 4)) + pad * (2 + 2) + E * (2 + 2 + 12 / 2), 1e-12,
        "ZeRO-1: dense state / dp, experts' / expert-DP")
    -- tp 2 with ep 1 and etp 1 (Megatron's expert ranks etp-ep-dp-pp): the
    -- experts are whole on each TP rank, so their data-parallel group is
    -- all four ranks, TP pairs included, where the dense ring runs over dp
    -- {0, 2}; pipesim simulates TP rank 0 of each pair and its twin joins
    -- the expert ring from its own rank, started by its twin's backward
    local model = ps.models.transformer{ layers = 2, hidden = 256, heads = 4, seq = 256,
        vocab = 512, experts = 8, topk = 2, expert_ffn = 2048 }
    local tspec = F.with(base, { layers = model, tp = 2, dp = 2, ep = 1, etp = 1,
        sequence_parallel = true, cluster = ps.cluster{ ranks = 4, device =
            ps.clusters.device("H100"), link = { bandwidth = beta, latency = alpha } } })
    local plan = require("pipesim.parallel").prepare(tspec, ps.clusters.device("H100"),
        function() return 0 end)
    local TE, TP = 0, 0
    for _, l in ipairs(plan.layers) do
        TE, TP = TE + (l.moe_expert_params or 0), TP + (l.params or 0)
    end
    H.check(TE > 0 and 2 * TE / 4 > 2 * (TP - TE) / 2, "the expert ring is the longer")
    local tp2 = ps.run(tspec)
    H.near(tp2.exposed_comm[1], ring(4, 2 * TE), 1e-9,
        "tp 2, ep 1, etp 1: the experts' ring over the TP pairs")
    H.raises(function() ps.run(F.with(base, { ep = 2, layers = { F.with(layer,
        { moe_expert_params = 2 * (P + E) }) } })) end,
        "ps.run: layers[1]: moe_expert_params (402000000) is more than its params (201000000)")
end

H.done()
