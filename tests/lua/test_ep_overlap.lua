-- Megatron's combined 1F1B all-to-all overlap (ps.run's ep_overlap,
-- ps.models.megatron's overlap_moe_expert_parallel_comm; core/par/ep.c
-- combined_pair): the steady state's forward of one microbatch and
-- backward of another run as one pair, their all-to-alls beside the
-- pair's compute. Closed forms on one node of dedicated links, the
-- interleaved schedule against the in-place one, and the configurations
-- Megatron refuses, each message asserted.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local beta = 1e9

-- 1 s forward (0.3 before the dispatch, 0.5 of experts), 2 s backward
local function moe_layer(B)
    return { fwd_time = 1, bwd_time = 2, moe_dispatch_bytes = B, moe_combine_bytes = B,
             moe_fwd_pre_time = 0.3, moe_fwd_expert_time = 0.5, moe_bwd_pre_time = 0.2,
             moe_bwd_expert_time = 1 }
end

-- 1. No pipeline (combined_1f1b_schedule_for_no_pipelining): F(0) alone,
-- then B(k) with F(k + 1) as pairs, then B(m - 1) alone. An all-to-all of
-- B bytes per rank over 4 ranks takes a = B / (3 beta); a microbatch has
-- four. A pair runs its one layer pair as Megatron's layer plan does:
-- B's 0.2 before its combine gradient, F's 0.3 (attention) beside that
-- all-to-all, B's experts (1) beside F's dispatch, F's experts (0.5)
-- beside B's dispatch gradient, B's attention (0.8) beside F's combine,
-- then F's last 0.2: 3 s when each all-to-all is shorter than the compute
-- beside it.
do
    local function run(B, overlap, share, m)
        return ps.run{ cluster = F.mesh(4, beta, 0), layers = { moe_layer(B) }, stages = 1,
                       dp = 4, ep = 4, microbatches = m or 4, record = "none",
                       ep_overlap = overlap, ep_comm_share = share }
    end
    local B = 3e8 -- a = 0.1 s
    local a = B / (3 * beta)
    local off, on = run(B, nil, 0), run(B, true, 0)
    H.near(off.makespan, 4 * (3 + 4 * a), 1e-12, "without the overlap: every all-to-all in place")
    H.near(on.makespan, (1 + 2 * a) + 3 * 3 + (2 + 2 * a), 1e-12,
        "combined 1F1B: the pairs' all-to-alls hidden behind the compute beside each")
    H.near(on.exposed_a2a[1], 4 * a, 1e-9, "only F(0)'s and B(3)'s all-to-alls exposed")
    H.near(F.max(on.exposed_a2a_overlapped), 0, 1e-12, "no pair waits")
    -- the SMs the communication takes: each of the four pieces with an
    -- all-to-all beside it (0.3, 1, 0.5, 0.8; not B's first 0.2 and F's
    -- last 0.2) loses ep_comm_share of the SMs while that all-to-all
    -- runs, a = 0.1 s alone (a mesh: each peer on a link of its own), so
    -- it takes share x a longer: 3 + 4 share a a pair
    local share = 20 / 132
    H.near(run(B, true, share).makespan, (1 + 2 * a) + 3 * (3 + 4 * share * a) + (2 + 2 * a),
        1e-12, "the overlapped pieces lose share x a each")
    -- an all-to-all that outlasts the piece beside it slows it whole: at
    -- share 0.5 and a = 1 s, F's 0.3 s beside B's combine gradient takes
    -- min(0.3 + 0.5, 0.3 / 0.5) = 0.6 s; the pair then as the a = 1 case
    -- below with the pieces min(t + 0.5, 2t): B's experts [1.2, 2.7],
    -- F's dispatch [1.2, 2.2]; F's experts [2.7, 3.7] beside B's dispatch
    -- gradient [2.7, 3.7]; B's attention (0.8 + 0.5) [3.7, 5] beside F's
    -- combine [3.7, 4.7]; F's rest [5, 5.2]
    local slow = run(3e9, true, 0.5)
    H.near(slow.makespan, (1 + 2) + 3 * 5.2 + (2 + 2), 1e-12, "pairs of 5.2 s at share 0.5")
    -- a = 1 s: each all-to-all longer than the compute beside it. B's
    -- combine gradient [0.2, 1.2], its experts [1.2, 2.2]; F's dispatch
    -- [1.2, 2.2], its experts [2.2, 2.7]; B's dispatch gradient [2.2,
    -- 3.2], its attention [3.2, 4]; F's combine [3.2, 4.2], its rest
    -- [4.2, 4.4]: 4.4 s a pair, 1.4 of it waiting (0.7 + 0.5 + 0.2)
    local big = run(3e9, true, 0)
    H.near(big.makespan, (1 + 2) + 3 * 4.4 + (2 + 2), 1e-12, "pairs of 4.4 s")
    H.near(big.exposed_a2a_overlapped[1], 3 * 1.4, 1e-9, "each pair waits 1.4 s")
    H.near(big.exposed_a2a[1], 4 + 3 * 1.4, 1e-9, "and the lone F(0) and B(3) 4 s")
    -- one microbatch: nothing to pair
    H.near(run(B, true, 0, 1).makespan, 3 + 4 * a, 1e-12, "m = 1: no pair")
end

-- 1b. Memory: a pair's forward allocates its activations layer by layer
-- as the backward beside it frees its own, so two layers of A bytes each
-- peak at 3A in a pair (the backward's 2A, then the forward's first layer
-- before the backward's first is freed), not the 4A of both whole.
do
    local A = 1e9
    local function layer() return F.with(moe_layer(3e8), { act_bytes = A }) end
    local function run(overlap)
        return ps.run{ cluster = F.mesh(4, beta, 0), layers = { layer(), layer() }, stages = 1,
                       dp = 4, ep = 4, microbatches = 4, record = "none", ep_overlap = overlap,
                       ep_comm_share = 0, memory = { weight_bytes = 0, grad_bytes = 0,
                                                     optimizer_bytes = 0 } }
    end
    H.near(run(nil).peak_memory[1], 2 * A, 1e-12, "without the overlap: one microbatch's 2A")
    H.near(run(true).peak_memory[1], 3 * A, 1e-12, "a pair: 3A at its peak")
end

-- 2. Interleaved 1F1B: the steady state's F(k + warmup) B(k) pairs hide
-- their all-to-alls, so less is exposed and the step is shorter.
do
    local function run(overlap)
        local layers = {}
        for i = 1, 8 do layers[i] = moe_layer(3e8) end
        return ps.run{ cluster = F.mesh(8, beta, 0), layers = layers, stages = 2,
                       virtual_stages = 2, schedule = "interleaved", dp = 4, ep = 4,
                       microbatches = 8, record = "none", ep_overlap = overlap,
                       ep_comm_share = 0 }
    end
    local off, on = run(nil), run(true)
    H.check(F.sum(on.exposed_a2a) < 0.6 * F.sum(off.exposed_a2a),
        "interleaved: the pairs hide most all-to-alls: " .. F.sum(on.exposed_a2a) .. " vs " ..
        F.sum(off.exposed_a2a))
    H.check(on.makespan < off.makespan, "interleaved: a shorter step")
    H.eq(F.max(on.exposed_a2a_overlapped), 0, "no pair waits")
end

-- 3. What Megatron refuses (transformer_config.py __post_init__), and a
-- flag that would change nothing.
do
    local base = { cluster = F.mesh(4, beta, 0), layers = { moe_layer(3e8), moe_layer(3e8) },
                   stages = 1, dp = 4, ep = 4, microbatches = 4, record = "none",
                   ep_overlap = true }
    H.raises(function() ps.run(F.with(base, { stages = 2, dp = 2, ep = 2 })) end,
        "ep_overlap runs Megatron's combined 1F1B: it needs schedule 'interleaved', or '1f1b' " ..
        "on one stage, got '1f1b' on 2")
    H.raises(function() ps.run(F.with(base, { ep = 1 })) end,
        "ep_overlap needs expert parallelism: ep > 1 and MoE layers")
    H.raises(function() ps.run(F.with(base, { moe_dispatcher = "allgather" })) end,
        "field 'ep_overlap' needs moe_dispatcher 'alltoall' or 'flex', got 'allgather'")
    H.raises(function() ps.run(F.with(base, { checkpoint = true })) end,
        "ep_overlap with full recompute (checkpoint) is refused")
    H.raises(function()
        ps.run(F.with(base, { layers = { { fwd_time = 1, bwd_time = 2 } }, ep = 1 }))
    end, "field 'ep_overlap' needs MoE layers")
    H.raises(function() ps.run(F.with(base, { ep_overlap = 1 })) end,
        "field 'ep_overlap' must be true or false")
end

-- 4. ps.models.megatron: overlap_moe_expert_parallel_comm is ep_overlap,
-- with Megatron's own refusals; delay_wgrad_compute needs it.
do
    local base = { num_layers = 8, hidden_size = 256, num_attention_heads = 8, seq_length = 256,
        vocab_size = 1000, bf16 = true, micro_batch_size = 1, global_batch_size = 16,
        pipeline_model_parallel_size = 2, num_layers_per_virtual_pipeline_stage = 2,
        world_size = 8, num_experts = 8, moe_router_topk = 2, moe_ffn_hidden_size = 512,
        moe_grouped_gemm = true, expert_model_parallel_size = 4,
        moe_token_dispatcher_type = "alltoall", record = "none",
        cluster = ps.cluster(ps.clusters.dgx("H100", 1)) }
    local off = ps.models.megatron(base)
    local on = ps.models.megatron(F.with(base, { overlap_moe_expert_parallel_comm = true,
                                                 delay_wgrad_compute = true }))
    H.eq(off.ep_overlap, nil, "off by default")
    H.eq(on.ep_overlap, true, "overlap_moe_expert_parallel_comm: ep_overlap")
    local a, b = ps.run(off), ps.run(on)
    H.check(F.sum(b.exposed_a2a) < F.sum(a.exposed_a2a), "the overlap hides all-to-alls: " ..
        F.sum(b.exposed_a2a) .. " vs " .. F.sum(a.exposed_a2a))
    H.raises(function() ps.models.megatron(F.with(base, { delay_wgrad_compute = true })) end,
        "megatron: delay_wgrad_compute needs overlap_moe_expert_parallel_comm (Megatron: " ..
        "\"overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute\")")
    local with = F.with(base, { overlap_moe_expert_parallel_comm = true })
    H.raises(function() ps.models.megatron(F.with(with, { expert_model_parallel_size = 1 })) end,
        "megatron: overlap_moe_expert_parallel_comm needs expert_model_parallel_size > 1")
    local novp = F.with(with, {})
    novp.num_layers_per_virtual_pipeline_stage = nil
    H.raises(function() ps.models.megatron(novp) end, "megatron: overlap_moe_expert_parallel_comm with pipeline_model_parallel_size 2 needs " ..
        "virtual pipeline stages")
    H.raises(function()
        ps.models.megatron(F.with(with, { recompute_granularity = "full",
            recompute_method = "uniform", recompute_num_layers = 1 }))
    end, "megatron: overlap_moe_expert_parallel_comm with recompute_granularity 'full'")
    H.raises(function() ps.models.megatron(F.with(with, { mtp_num_layers = 2 })) end,
        "megatron: overlap_moe_expert_parallel_comm with mtp_num_layers 2")
    H.raises(function() ps.run(ps.models.megatron(F.with(with,
        { moe_token_dispatcher_type = "allgather" }))) end,
        "field 'ep_overlap' needs moe_dispatcher 'alltoall' or 'flex', got 'allgather'")
    H.raises(function() ps.models.megatron(F.with(with,
        { overlap_moe_expert_parallel_comm = "yes" })) end,
        "megatron: overlap_moe_expert_parallel_comm must be true or false, got 'yes'")
end

H.done()
