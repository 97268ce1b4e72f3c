-- Memory of a rank (docs/parallelism.md "Memory"): one layer's activations
-- against Megatron-LM's theoretical_memory_usage.py where it covers the
-- case, the whole step of a one-stage run against its formula, and Llama 3
-- 405B's peak per pipeline stage pinned term by term, and the published
-- runs of scenarios/memory_fit.lua fitting. Runs under `pipesim run`.
-- run with --unsafe: it loads the scenario from scenarios/, outside the
-- test's directory (the sandbox allows its own directory and lua/ only)
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local parallel = require "pipesim.parallel"

-- Megatron-LM megatron/training/theoretical_memory_usage.py (commit
-- d98e8a6), compute_activation_memory with sequence parallelism: per
-- layer s b h (18 + 4 f / h) / t (Korthikanti et al. 2022 Table 2 with the
-- s^2 terms gone: flash attention or selective recompute; GPT: h = q =
-- kv, LayerNorm, GeLU, dropout, 16-bit); at pp = 1 plus the embedding's
-- token ids 8 s b and dropout mask s b h, and the head's inputs and fp32
-- logits s b h 4 (1 + V / h), all over t.
local function megatron_layer(s, b, h, f, t) return s * b * h * (18 + 4 * f / h) / t end
local function megatron_pp1(s, b, h, f, t, L, V)
    return (L * s * b * h * (18 + 4 * f / h) + 8 * s * b + s * b * h
        + s * b * h * 4 * (1 + V / h)) / t
end

local function gpt(h, f, heads, seq, L, V)
    return ps.models.formulas.normalize { layers = L, hidden = h, ffn_hidden = f, heads = heads,
        seq = seq, vocab = V, microbatch = 1, dtype = "bf16", flash_attention = false }
end

-- one layer, exactly (selective recompute drops the s^2 tensors)
for _, x in ipairs { { 1024, 4096, 16, 2048, 1 }, { 1024, 4096, 16, 2048, 8 },
                     { 12288, 49152, 96, 2048, 8 }, { 4096, 11008, 32, 4096, 4 } } do
    local h, f, heads, seq, t = table.unpack(x)
    local s = gpt(h, f, heads, seq, 1, 51200)
    H.near(parallel.block_act_bytes(s, t, true, true), megatron_layer(seq, 1, h, f, t), 1e-12,
        string.format("one layer, h %d f %d t %d: s b h (18 + 4 f / h) / t", h, f, t))
end
-- 34 s b h / t for GPT's 4h MLP (Korthikanti et al. Table 2, SP + selective)
H.near(parallel.block_act_bytes(gpt(1024, 4096, 16, 2048, 1, 51200), 4, true, true),
    34 * 2048 * 1024 / 4, 1e-12, "34 sbh/t")

-- a whole one-stage step: Megatron's pp = 1 formula, less the token ids
-- (not held by pipesim: docs/parallelism.md "Not counted")
do
    local L, h, f, seq, V, t = 4, 1024, 4096, 2048, 51200, 4
    local layers = ps.models.transformer { layers = L, hidden = h, ffn_hidden = f, heads = 16,
        seq = seq, vocab = V, microbatch = 1, flash_attention = false }
    local c = ps.cluster(ps.clusters.dgx("H100", 1))
    local r = ps.run { cluster = c, layers = layers, stages = 1, microbatches = 1, tp = t,
        sequence_parallel = true, recompute = "selective", record = "none" }
    H.near(r.peak_memory[1] - r.static_memory[1],
        megatron_pp1(seq, 1, h, f, t, L, V) - 8 * seq / t, 1e-12,
        "one stage, one microbatch: theoretical_memory_usage.py's pp = 1 activations")
end

-- Llama 3 405B as in the Llama 3 paper (Dubey et al. 2024, Table 4 and
-- Sec. 3.3): TP 8, PP 16, 126 layers, the first and last stage one layer
-- fewer (the embedding and the loss take their places), one layer per
-- virtual stage, 16 microbatches of 8,192 tokens, no dropout, no
-- recompute; here on 16 nodes (dp 1, so 18 bytes a parameter: the terms
-- that do not depend on dp).
-- the run on `nodes` DGX H100 (dp = nodes / 16), 16 microbatches a DP rank
local function llama405(nodes, extra)
    local f = { num_layers = 126, hidden_size = 16384,
        ffn_hidden_size = 53248, num_attention_heads = 128, group_query_attention = true,
        num_query_groups = 8, swiglu = true, normalization = "RMSNorm",
        position_embedding_type = "rope", disable_bias_linear = true,
        untie_embeddings_and_output_weights = true, seq_length = 8192, vocab_size = 128256,
        attention_dropout = 0, hidden_dropout = 0, tensor_model_parallel_size = 8,
        pipeline_model_parallel_size = 16, num_layers_per_virtual_pipeline_stage = 1,
        account_for_embedding_in_pipeline_split = true,
        account_for_loss_in_pipeline_split = true, micro_batch_size = 1,
        global_batch_size = nodes, bf16 = true, sequence_parallel = true,
        world_size = 8 * nodes, cluster = ps.cluster(ps.clusters.dgx("H100", nodes)),
        record = "none" }
    for k, v in pairs(extra or {}) do f[k] = v end
    return ps.models.megatron(f)
end
do
    local r = ps.run(llama405(16))
    H.eq(#r.peak_memory, 16, "one simulated rank a pipeline stage (TP ranks folded)")
    local h, f, a, s, t, V = 16384, 53248, 128, 8192, 8, 129024 -- V padded to 128 t
    local q, kv = h, 8 * 128
    -- a block's activations per token on one TP rank, term by term
    local per_token = (2 * 2 * h      -- the two RMSNorms' inputs
        + 2 * h                       -- QKV input
        + 2 * (q + kv) + 2 * kv       -- Q, K; V
        + 2 * q                       -- output projection input
        + 2 * h                       -- MLP input
        + 3 * 2 * f                   -- SwiGLU: gate, up, their product
        + 4 * a) / t                  -- fused attention's fp32 log-sum-exp
    local A = per_token * s
    H.near(A, 533200896, 1e-12, "one block, one microbatch: 533.2 MB")
    local head = (2 * 2 * s * h + 4 * s * V) / t -- final norm and LM head inputs, fp32 logits
    local block = (2 * h * q + 2 * h * kv + 3 * h * f) / t + 2 * h
    local emb = V * h / t
    local p, v, m = 16, 8, 16
    for rank = 0, p - 1 do
        -- Megatron's interleaved warm-up, + 1 for the first steady forward,
        -- capped at every forward (m v): chunk-microbatches in flight
        local n = math.min(2 * (p - rank - 1) + (v - 1) * p + 1, m * v)
        local params, act = 8 * block, n * A
        if rank == 0 then
            -- chunk 0 is the embedding alone (no activations without
            -- dropout): all 16 x 8 forwards in flight, 16 x 7 blocks
            params, act = emb + 7 * block, 7 * m * A
        elseif rank == p - 1 then
            -- chunk 7 is the head alone: 7 x 16 blocks, then one head at a
            -- time, each freed by its backward before the next forward
            params, act = 7 * block + emb + h, 7 * m * A + head
        end
        H.near(r.static_memory[rank + 1], 18 * params, 1e-12,
            "405B static, pipeline rank " .. rank .. ": 2 + 4 + 12 bytes a parameter")
        H.near(r.peak_memory[rank + 1] - r.static_memory[rank + 1], act, 1e-12,
            "405B activations, pipeline rank " .. rank)
    end
end

-- Meta's sharding (the Llama 3 paper Sec. 3.3: FSDP over the optimizer
-- state and the gradients, weights whole, gradients in FP32): zero = 2,
-- here over DP 2, a middle stage's 8 blocks at 2 + (4 + 12)/2 bytes a
-- parameter plus two reduction buckets of Megatron's 40M elements in fp32
-- (docs/sharding.md), its activations unchanged
do
    local run = llama405(32, { overlap_grad_reduce = true })
    run.zero = 2
    local r = ps.run(run)
    local block = (2 * 16384 * 16384 + 2 * 16384 * 1024 + 3 * 16384 * 53248) / 8 + 2 * 16384
    local at -- the first simulated rank of pipeline rank 1
    for i, rank in ipairs(r.rank) do
        if rank // 16 == 1 and not at then at = i end -- tp 8 x dp 2 a stage
    end
    H.check(at ~= nil, "a simulated rank of pipeline rank 1")
    H.near(r.static_memory[at or 1], 8 * block * (2 + (4 + 12) / 2) + 2 * 40e6 * 4, 1e-12,
        "ZeRO-2 over DP 2: w + (g + K)/2 a parameter, two fp32 buckets")
    H.near(r.peak_memory[at or 1] - r.static_memory[at or 1], 128 * 533200896, 1e-12,
        "ZeRO-2: the activations unchanged")
end

-- published runs fit (scenarios/memory_fit.lua without the 90 s Meta row):
-- peaks and steps pinned as docs/parallelism.md prints them
do
    ps.args.quick = 1
    local rows = dofile("scenarios/memory_fit.lua")
    local PINNED = {
        { "Llama 3.1 405B FP8-CS, Megatron-Bridge", 180.52e9, 59.465 },
        { "Nemotron-4 340B BF16 CP 2, dgxc", 54.19e9, 4.563 },
    }
    H.eq(#rows, #PINNED, "every quick row")
    for i, p in ipairs(PINNED) do
        local r = rows[i] or {}
        H.eq(r.name, p[1], "row " .. i)
        H.eq(r.fits, true, p[1] .. " fits")
        H.near(r.peak or 0, p[2], 1e-4, p[1] .. " peak")
        H.near(r.pipesim or 0, p[3], 1e-4, p[1] .. " step")
    end
end

H.done()
