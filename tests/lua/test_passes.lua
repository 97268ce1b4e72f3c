-- The lowering passes beyond the pipeline (core/par/pass.h): the tied
-- embedding's gradient all-reduce (par/tied.c, Megatron's embedding group),
-- TP ranks simulated once or each (par/links.c's fold rule, par/sim.h), and
-- what each simulated rank stands for (r.stands_for, r.tp_groups).
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local alpha, beta = 1e-3, 1e9 -- 1 ms, 1 GB/s per direction
local function ring2(bytes) return 2 * (alpha + bytes / (2 * beta)) end

-- 1. A tied head: its gradient is all-reduced with the first stage's after
-- the backward, before the optimizer step (finalize_model_grads). Two
-- stages on a mesh, one replica, free pipeline transfers: the step is the
-- pipeline's plus one 2-rank ring all-reduce of shared x grad_bytes (the
-- textbook ring: no NCCL hardware, no protocol).
do
    local S = 5e7 -- shared parameters, 2 bytes of gradient each
    local layers = { { fwd_time = 1, params = 1e8 }, { fwd_time = 1, params = 1e8,
                       shared_params = S } }
    local base = { cluster = F.mesh(2, beta, alpha), layers = layers, stages = 2,
                   microbatches = 4, grad_sync = { algorithm = "ring" }, record = "none" }
    local r = ps.run(base)
    local plain = ps.run(F.with(base, { layers = { layers[1], { fwd_time = 1, params = 1e8 } } }))
    H.near(r.makespan, plain.makespan + ring2(2 * S), 1e-12,
        "step = pipeline + the embedding all-reduce")
    H.near(r.exposed_comm[1], ring2(2 * S), 1e-9, "stage 0 waits the whole all-reduce")
    H.check(r.exposed_comm[2] > ring2(2 * S), "stage 1 waits longer: it ends first")
    H.eq(plain.exposed_comm, { 0, 0 }, "nothing to wait on without it")
    -- pp = 1: both copies on one rank, summed in place, nothing on the network
    local one = ps.run(F.with(base, { stages = 1, cluster = F.mesh(1, beta, alpha) }))
    local one_plain = ps.run(F.with(base, { stages = 1, cluster = F.mesh(1, beta, alpha),
        layers = { layers[1], { fwd_time = 1, params = 1e8 } } }))
    H.eq(one.makespan, one_plain.makespan, "one stage: no all-reduce")
    -- with dp = 2 it follows the data-parallel sync on the same lanes
    local dp = ps.run(F.with(base, { cluster = F.mesh(4, beta, alpha), dp = 2,
        grad_sync = { algorithm = "ring", overlap = false, bucket = "1 GB",
                      first_bucket = "1 GB" } }))
    local dp_plain = ps.run(F.with(base, { cluster = F.mesh(4, beta, alpha), dp = 2,
        layers = { layers[1], { fwd_time = 1, params = 1e8 } },
        grad_sync = { algorithm = "ring", overlap = false, bucket = "1 GB",
                      first_bucket = "1 GB" } }))
    H.near(dp.makespan, dp_plain.makespan + ring2(2 * S), 1e-12,
        "after the data-parallel sync, before the optimizer")
    -- interleaved: the head on rank p - 1 (loop placement) all-reduces;
    -- zbv's V placement puts the last stage on rank 0: no all-reduce
    local four = F.layers(4, { fwd_time = 1, params = 1e6 })
    four[4].shared_params = S
    local function interleaved(l)
        return ps.run{ cluster = F.mesh(2, beta, alpha), layers = l, stages = 2,
            virtual_stages = 2, microbatches = 4, schedule = "interleaved",
            grad_sync = { algorithm = "ring" }, record = "none" }
    end
    local il, il_plain = interleaved(four), interleaved(F.layers(4, { fwd_time = 1, params = 1e6 }))
    H.near(il.makespan, il_plain.makespan + ring2(2 * S), 1e-12, "interleaved: the all-reduce added")
    H.near(il.exposed_comm[1], ring2(2 * S), 1e-9, "interleaved: rank 0 waits the whole all-reduce")
    local zbv = ps.run{ cluster = F.mesh(2, beta, alpha), layers = four, stages = 2,
        virtual_stages = 2, microbatches = 4, schedule = "zbv", record = "none" }
    H.eq(zbv.exposed_comm, { 0, 0 }, "zbv: head and embedding on rank 0")
end

-- 2. ps.models.megatron: untie_embeddings_and_output_weights = false (the
-- default) pays the all-reduce, true does not (issue 27: both gave the
-- same step before)
do
    local c = ps.cluster(ps.clusters.dgx("A100", 1))
    local flags = { num_layers = 4, hidden_size = 1024, num_attention_heads = 16,
        seq_length = 512, vocab_size = 32000, pipeline_model_parallel_size = 2,
        tensor_model_parallel_size = 2, global_batch_size = 8, bf16 = true, cluster = c,
        record = "none" }
    local tied = ps.run(ps.models.megatron(flags))
    local untied = ps.run(ps.models.megatron(F.with(flags,
        { untie_embeddings_and_output_weights = true })))
    H.check(tied.makespan > untied.makespan, string.format(
        "tied %.9f s > untied %.9f s", tied.makespan, untied.makespan))
    H.check(tied.exposed_comm[1] > 0 and untied.exposed_comm[1] == 0,
        "the first stage waits for the embedding's all-reduce")
end

-- 3. TP simulated once where its ranks' traffic cannot meet, each rank
-- otherwise. Two nodes of two GPUs, TP within a node, the pipeline across:
-- with a NIC per GPU the two TP ranks' activations cross on their own NICs
-- (one program stands for the group); with one NIC per node they share it,
-- so both are simulated and each transfer takes twice as long.
do
    local layers = ps.models.transformer{ layers = 2, hidden = 1024, heads = 16, seq = 2048,
        vocab = 1024 }
    local dev = ps.clusters.device("A100")
    local function cl(nics, over)
        return ps.cluster{ nodes = 2, gpus_per_node = 2, nics_per_node = nics,
            oversubscription = over, device = dev,
            intra = { bandwidth = "300 GB/s", latency = "1 us" },
            inter = { bandwidth = "2 GB/s", latency = "5 us" } }
    end
    local function run(c) return ps.run{ cluster = c, layers = layers, stages = 2,
        microbatches = 4, tp = 2, record = "none" } end
    local own, shared, over = run(cl(2, 1)), run(cl(1, 1)), run(cl(2, 2))
    H.eq(own.rank, { 0, 2 }, "a NIC per GPU: one program per TP group")
    H.eq(own.stands_for, { { 0, 1 }, { 2, 3 } }, "each stands for its TP group")
    H.check(rawequal(own.stands_for[1], own.tp_groups[1]), "stands_for is the TP group")
    H.eq(shared.rank, { 0, 2, 1, 3 }, "a shared NIC: every TP rank simulated")
    H.eq(shared.stands_for, { { 0 }, { 2 }, { 1 }, { 3 } }, "each stands for itself")
    H.eq(shared.tp_groups, { { 0, 1 }, { 2, 3 }, { 0, 1 }, { 2, 3 } }, "their TP groups")
    H.check(shared.makespan > own.makespan, string.format(
        "the shared NIC carries both ranks' activations: %.6f > %.6f", shared.makespan,
        own.makespan))
    H.eq(#over.rank, 4, "an oversubscribed core: every TP rank simulated")
    -- the decision is the network's, never a collected cluster's whose
    -- address a new one took (the core caches it across a sweep's runs)
    local bad = 0
    for i = 1, 8 do
        local nics = i % 2 == 0 and 1 or 2
        local r = run(cl(nics, 1))
        if #r.rank ~= (nics == 1 and 4 or 2) then bad = bad + 1 end
        collectgarbage()
    end
    H.eq(bad, 0, "each new cluster decided anew")
    -- a DGX node per GPU NIC, no oversubscription: folded
    local dgx = ps.cluster(ps.clusters.dgx("H100", 2))
    local d = ps.run{ cluster = dgx, layers = layers, stages = 2, microbatches = 4, tp = 8,
        record = "none" }
    H.eq(d.rank, { 0, 8 }, "DGX H100: TP groups simulated once")
    H.eq(#d.stands_for[2], 8)
end

H.done()
