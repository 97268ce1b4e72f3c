-- Sharded data parallelism (ZeRO-2, ZeRO-3 / FSDP, hybrid sharding;
-- core/par/fsdp.c, docs/sharding.md): the ZeRO paper's memory per rank,
-- the static memory of a run, an exposed all-gather by hand, and every
-- bad input's message. The communication volumes are test_par_fsdp.c's.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"
local S = ps.sharding

local alpha, beta = 1e-3, 1e9 -- 1 ms, 1 GB/s per direction
local function mesh(n) return F.mesh(n, beta, alpha) end

-- 1. The ZeRO paper's figures (Rajbhandari et al. 2020, Figure 1: psi =
-- 7.5B, Nd = 64, K = 12): baseline 120 GB, stage 1 31.4 GB, stage 2 16.6
-- GB, stage 3 1.9 GB per GPU. The formulas exactly, then rounded as the
-- paper prints them.
do
    local psi, nd = 7.5e9, 64
    local want = { [0] = (2 + 2 + 12) * psi, 2 * psi + 2 * psi + 12 * psi / nd,
                   2 * psi + (2 + 12) * psi / nd, (2 + 2 + 12) * psi / nd }
    local paper = { [0] = 120, 31.4, 16.6, 1.9 }
    for z = 0, 3 do
        local got = S.model_states(psi, z, nd)
        H.near(got, want[z], 1e-12, ("stage %d: the paper's formula"):format(z))
        H.eq(string.format("%.1f", got / 1e9), string.format("%.1f", paper[z]),
             ("stage %d: the paper's %.1f GB"):format(z, paper[z]))
    end
end

-- 2. A run's static memory per rank is the formula plus what the
-- implementations hold beyond it (core/par/fsdp.c par_fsdp_buffers): the
-- 7.5B model as 8 layers on 64 ranks, one stage. ZeRO-2 adds its two
-- reduction buckets (grad_sync.bucket, 25 MiB by default); ZeRO-3 the
-- unsharded weights and gradients of two units (the largest layer's
-- 0.9375e9 parameters x (2 + 2) x 2).
do
    local psi, nd = 7.5e9, 64
    local layers = F.layers(8, { fwd_time = 1, params = psi / 8, out_bytes = 0 })
    local beyond = { [0] = 0, 0, 2 * 25 * 2^20, 2 * (psi / 8) * 4 }
    for z = 0, 3 do
        local r = ps.run{ cluster = mesh(nd), layers = layers, stages = 1, microbatches = 1,
                          dp = nd, zero = z, record = "none" }
        H.eq(#r.static_memory, nd, "one figure per rank")
        for k = 1, nd do
            H.near(r.static_memory[k], S.model_states(psi, z, nd) + beyond[z], 1e-12,
                   ("stage %d, rank %d: formula + buffers"):format(z, k - 1))
        end
    end
end

-- 3. Hybrid sharding: shards of 2 out of dp 4, so the formulas' Nd is 2.
do
    local layers = F.layers(2, { fwd_time = 1, params = 1e8, out_bytes = 0 })
    local r = ps.run{ cluster = mesh(4), layers = layers, stages = 1, microbatches = 1, dp = 4,
                      zero = 3, shard_group = 2, record = "none" }
    for k = 1, 4 do
        H.near(r.static_memory[k], 2e8 * 16 / 2 + 2 * 1e8 * 4, 1e-12, "zero 3, shards of 2")
    end
    local z1 = ps.run{ cluster = mesh(4), layers = layers, stages = 1, microbatches = 1, dp = 4,
                       zero = 1, shard_group = 2, record = "none" }
    H.near(z1.static_memory[1], 2e8 * (4 + 12 / 2), 1e-12, "zero 1, shards of 2")
end

-- 4. One unit whose all-gather outlasts the previous unit's compute, by
-- hand. dp 2 on the mesh, ring, no protocol: an all-gather or
-- reduce-scatter of T bytes takes alpha + T / (2 beta). Layer 0: 1e8
-- parameters, forward 1 s, backward 2 s; layer 1: 2e9 parameters,
-- forward 0.05 s, backward 0.1 s; reshard_after_forward = false (no
-- gathers before the backward), one microbatch. A unit's share of the
-- forward is its share of the backward: 1 s and 0.05 s.
--   gather 0 (2e8 B): 0 .. 0.101            layer 0 forward 0.101 .. 1.101
--   gather 1 (4e9 B): 0.101 .. 2.102 (it starts with layer 0's compute,
--     the one unit FSDP prefetches) -> layer 1 waits 2.102 - 1.101 = 1.001
--   layer 1 forward 2.102 .. 2.152, backward 2.152 .. 2.252, then its
--     reduce-scatter (4e9 B) 2.252 .. 4.253
--   layer 0 backward 2.252 .. 4.252, its reduce-scatter (2e8 B) after
--     the first on the same stream: 4.253 .. 4.354 = the step
-- exposed: 0.101 + 1.001 (the gathers) + 4.354 - 4.252 (the last
-- reduce-scatter) = 1.204.
do
    local layers = { { fwd_time = 1, params = 1e8, out_bytes = 0 },
                     { fwd_time = 0.05, params = 2e9, out_bytes = 0 } }
    local r = ps.run{ cluster = mesh(2), layers = layers, stages = 1, microbatches = 1, dp = 2,
                      zero = 3, reshard_after_forward = false,
                      grad_sync = { algorithm = "ring" }, record = "none" }
    H.near(r.makespan, 4.354, 1e-9, "step by hand")
    H.near(r.exposed_comm[1], 1.204, 1e-9, "exposed by hand")
    H.near(r.exposed_comm[2], 1.204, 1e-9, "the other replica alike")
    -- with the default reshard the backward gathers again: the step grows
    local again = ps.run{ cluster = mesh(2), layers = layers, stages = 1, microbatches = 1,
                          dp = 2, zero = 3, grad_sync = { algorithm = "ring" }, record = "none" }
    H.check(again.makespan > r.makespan + 1, "gathering before the backward costs time")
end

-- 5. ZeRO-2 and 3 run with pipelines and every microbatch (1F1B, 2
-- stages, dp 2, 4 microbatches): the step ends, each rank with an
-- exposed figure, and the sharded memory.
do
    local layers = F.layers(4, { fwd_time = 0.5, params = 1e7, out_bytes = 1e6 })
    for _, z in ipairs{ 2, 3 } do
        local r = ps.run{ cluster = mesh(4), layers = layers, stages = 2, microbatches = 4,
                          dp = 2, zero = z, record = "none" }
        H.eq(#r.exposed_comm, 4, ("zero %d: exposed per rank"):format(z))
        H.check(r.makespan > 4 * 3 * 1, ("zero %d: at least the pipeline"):format(z))
        H.near(r.exposed_comm[3], r.exposed_comm[1], 1e-12, ("zero %d: replicas alike"):format(z))
    end
end

-- 6. Front-end names (lua/pipesim/sharding.lua).
do
    H.eq({ S.fsdp("FULL_SHARD") }, { 3 })
    H.eq({ S.fsdp("SHARD_GRAD_OP") }, { 2 })
    H.eq({ S.fsdp("NO_SHARD") }, { 0 })
    H.eq({ S.fsdp("HYBRID_SHARD", nil, 8) }, { 3, 8 })
    H.eq({ S.fsdp("_HYBRID_SHARD_ZERO2", 4, 8) }, { 2, 4 })
    H.eq(S.megatron("optim_grads_params"), 3)
    H.eq(S.megatron("optim"), 1)
    H.eq(S.deepspeed({ stage = 3, reduce_bucket_size = 5e8 }, 1, 2), { zero = 3, bucket = 1e9 })
    -- keys that are not read come back listed (and in one warning line)
    H.eq({ S.deepspeed({ stage = 3, overlap_comm = true, contiguous_gradients = true,
        stage3_prefetch_bucket_size = 5e7 }) },
        { { zero = 3 }, { "contiguous_gradients", "stage3_prefetch_bucket_size" } })
    H.raises(function() S.fsdp("FULL") end,
        "sharding_strategy: unknown FSDP sharding strategy 'FULL' (expected FULL_SHARD, " ..
        "HYBRID_SHARD, NO_SHARD, SHARD_GRAD_OP, _HYBRID_SHARD_ZERO2)")
    H.raises(function() S.fsdp("HYBRID_SHARD") end,
        "sharding_strategy = HYBRID_SHARD shards within a node: give shard_group")
    H.raises(function() S.fsdp("FULL_SHARD", 4) end,
        "shard_group applies to HYBRID_SHARD and _HYBRID_SHARD_ZERO2 only")
    H.raises(function() S.megatron("full") end,
        "megatron: data_parallel_sharding_strategy: unknown value 'full' (expected no_shard, " ..
        "optim, optim_grads, optim_grads_params)")
    H.raises(function() S.deepspeed({ stage = 4 }) end,
        "zero_optimization.stage must be 0, 1, 2 or 3, got 4")
    H.raises(function() S.deepspeed({ stage = 3 }, 2) end,
        "zero_optimization.stage = 3 with 2 pipeline stages: DeepSpeed refuses ZeRO-2 and " ..
        "ZeRO-3 with pipeline parallelism")
    H.raises(function() S.deepspeed({ stage = 2, reduce_bucket_sise = 1 }) end,
        "zero_optimization: unknown key 'reduce_bucket_sise' (did you mean 'reduce_bucket_size'?)")
end

-- 7. Bad input, each message.
do
    local layers = F.layers(2, { fwd_time = 1, params = 1e6 })
    local function run(extra)
        return ps.run(F.with({ cluster = mesh(4), layers = layers, stages = 1, microbatches = 1,
                               dp = 4, record = "none" }, extra))
    end
    H.raises(function() run{ zero = 4 } end, "field 'zero' must be an integer in 0..3, got 4")
    H.raises(function() run{ zero = 3, shard_group = 3 } end,
        "field 'shard_group': 3 does not divide the data-parallel size 4")
    local moe = { fwd_time = 1, bwd_time = 2, moe_dispatch_bytes = 1e6, moe_combine_bytes = 1e6,
        moe_fwd_pre_time = 0.3, moe_fwd_expert_time = 0.5, moe_bwd_pre_time = 0.2,
        moe_bwd_expert_time = 1 }
    H.raises(function() run{ zero = 2, ep = 2, layers = { moe, moe } } end,
        "zero = 2 with ep = 2 is not modelled (the experts' shards span the " ..
        "expert-data-parallel group)")
    H.raises(function() run{ shard_group = 2 } end,
        "field 'shard_group' needs zero = 1, 2 or 3 (hybrid sharding shards within groups of " ..
        "shard_group data-parallel ranks)")
    H.raises(function() run{ zero = 2, reshard_after_forward = false } end,
        "field 'reshard_after_forward' needs zero = 3 (parameters sharded: FSDP's FULL_SHARD), " ..
        "got zero = 2")
    H.raises(function() run{ zero = 3, reshard_after_forward = 3 } end,
        "field 'reshard_after_forward': 3 does not divide the shard group of 4 ranks")
    H.raises(function() run{ zero = 3, shard_group = 2, reshard_after_forward = 4 } end,
        "field 'reshard_after_forward': 4 does not divide the shard group of 2 ranks")
    H.raises(function() run{ zero = 3, reshard_after_forward = "yes" } end,
        "field 'reshard_after_forward'")
    H.raises(function() run{ zero = 3, grad_sync = { overlap_param_gather = true } } end,
        "field 'grad_sync.overlap_param_gather' is modelled with zero = 1 only, got zero = 3 " ..
        "(zero = 3 gathers each layer before its forward, prefetched)")
    H.raises(function() run{ zero = 2, grad_sync = { overlap = false } } end,
        "field 'grad_sync.overlap' = false is not modelled with zero = 2: its reduce-scatters " ..
        "run during each backward")
    H.raises(function()
        ps.run{ cluster = mesh(4), layers = layers, stages = 2, microbatches = 2, dp = 2, zero = 3,
                schedule = "zb_h1", record = "none" }
    end, "zero = 3 is not modelled with a split backward or DualPipe's overlapped F&B " ..
        "(schedule 'zb_h1')")
end

-- 8. Megatron's flags (lua/pipesim/models/megatron.lua sharding_of).
do
    local base = { num_layers = 4, hidden_size = 256, num_attention_heads = 8, seq_length = 256,
        vocab_size = 1000, bf16 = true, micro_batch_size = 1, global_batch_size = 8,
        world_size = 8, overlap_grad_reduce = true, record = "none",
        cluster = ps.cluster(ps.clusters.dgx("H100", 1)) }
    local function build(extra) return ps.models.megatron(F.with(base, extra)) end
    local r = build{ use_megatron_fsdp = true }
    H.eq({ r.zero, r.shard_group, r.reshard_after_forward }, { 3 }, "Megatron-FSDP: optim_grads_params")
    H.eq(build{ use_megatron_fsdp = true, data_parallel_sharding_strategy = "optim_grads" }.zero, 2)
    H.eq(build{ use_megatron_fsdp = true, data_parallel_sharding_strategy = "optim" }.zero, 1)
    H.eq(build{ use_megatron_fsdp = true, data_parallel_sharding_strategy = "no_shard" }.zero, nil)
    local FSDP2 = { use_torch_fsdp2 = true, untie_embeddings_and_output_weights = true }
    r = build(F.with(FSDP2, { torch_fsdp2_no_reshard_after_forward = true }))
    H.eq({ r.zero, r.reshard_after_forward }, { 3, false }, "FSDP2 without resharding")
    r = build{ use_distributed_optimizer = true, num_distributed_optimizer_instances = 2 }
    H.eq({ r.zero, r.shard_group }, { 1, 4 }, "two optimizer instances: shards of dp / 2")
    H.near(ps.run(build{ use_megatron_fsdp = true }).makespan,
        ps.run(F.with(build{}, { zero = 3 })).makespan, 1e-12, "Megatron-FSDP's step is zero = 3's")
    H.raises(function() build{ use_megatron_fsdp = true, use_torch_fsdp2 = true } end,
        "megatron: use_torch_fsdp2 and use_megatron_fsdp are both set")
    -- Megatron-Core 0.20 arguments.py's assertions on --use-torch-fsdp2
    H.raises(function() build{ use_torch_fsdp2 = true } end,
        "megatron: --use-torch-fsdp2 requires --untie-embeddings-and-output-weights")
    H.raises(function() build(F.with(FSDP2, { pipeline_model_parallel_size = 2 })) end,
        "megatron: --use-torch-fsdp2 is not supported with pipeline parallelism " ..
        "(pipeline_model_parallel_size = 2)")
    H.raises(function() build(F.with(FSDP2, { expert_model_parallel_size = 2, num_experts = 4 })) end,
        "megatron: --use-torch-fsdp2 is not supported with expert parallelism " ..
        "(expert_model_parallel_size = 2)")
    H.raises(function() build(F.with(FSDP2, { use_distributed_optimizer = true })) end,
        "megatron: --use-torch-fsdp2 is not supported with MCore's distributed optimizer")
    H.raises(function() build{ data_parallel_sharding_strategy = "optim" } end,
        "megatron: data_parallel_sharding_strategy changes nothing without use_megatron_fsdp")
    H.raises(function() build{ torch_fsdp2_no_reshard_after_forward = true } end,
        "megatron: torch_fsdp2_no_reshard_after_forward changes nothing without use_torch_fsdp2")
    H.raises(function() build{ num_distributed_optimizer_instances = 2 } end,
        "megatron: num_distributed_optimizer_instances = 2 needs a sharded optimizer " ..
        "(use_distributed_optimizer or use_megatron_fsdp)")
    H.raises(function() build{ use_distributed_optimizer = true, num_distributed_optimizer_instances = 3 } end,
        "megatron: num_distributed_optimizer_instances (3) does not divide the data-parallel size (8)")
    H.raises(function() build{ use_megatron_fsdp = true, data_parallel_sharding_strategy = "full" } end,
        "megatron: data_parallel_sharding_strategy: unknown value 'full'")
end

-- 9. With context parallelism the sharded group is dp x cp (Megatron's
-- dp-cp group): ZeRO-3 over cp 2 x dp 2 holds (2 + 2 + 12)/4 bytes a
-- parameter plus two layers' weights and gradients unsharded (and CP's
-- K/V buffers); shards of 2
-- (the CP pairs) hold /2; a shard_group must divide dp x cp.
do
    local node = ps.cluster(ps.clusters.dgx("H100", 1))
    local mha = ps.models.transformer{ layers = 2, hidden = 512, heads = 8, seq = 1024,
        vocab = 1024, dtype = "bf16", flash_attention = true }
    local psi, big = 0, 0
    for _, l in ipairs(mha) do psi = psi + (l.params or 0); big = math.max(big, l.params or 0) end
    local function run(extra)
        return ps.run(F.with({ cluster = node, layers = mha, stages = 1, microbatches = 2, cp = 2,
            dp = 2, zero = 3, record = "none" }, extra))
    end
    for _, x in ipairs { { nil, 4 }, { 4, 4 }, { 2, 2 } } do
        local r = run{ shard_group = x[1] }
        for i = 1, 4 do
            -- and ring attention's K/V buffers (docs/parallelism.md
            -- "Memory"): 4 x the local K and V, 2 x 2 bytes x 512 x 8 x 64
            local kv_buffers = 4 * (2 * 2 * 512 * 8 * 64)
            H.near(r.static_memory[i], psi * 16 / x[2] + 2 * big * (2 + 2) + kv_buffers, 1e-12,
                ("cp 2 x dp 2, shard_group %s: rank %d"):format(tostring(x[1]), i - 1))
        end
    end
    H.raises(function() run{ shard_group = 3 } end,
        "field 'shard_group': 3 does not divide the data-parallel size 4")
end

H.done()
