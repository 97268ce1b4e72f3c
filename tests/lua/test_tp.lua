-- Tensor and sequence parallelism, recompute modes: Megatron-LM's TP
-- collectives per block (count and volume), their time equal to the
-- event-simulated ring and to its closed form, Korthikanti et al. 2022's
-- activation formulas, per-rank parameters, the tp-cp-ep-dp-pp rank
-- order, and memory ordering none > selective > full. Runs under
-- `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"
local parallel = require "pipesim.parallel"

-- GPT shape, 16-bit with dropout: s = 512, b = 2, h = 1024, a = 16
local shape = { layers = 4, hidden = 1024, heads = 16, seq = 512, vocab = 1024,
    microbatch = 2, dtype = "fp16" }
local s = ps.models.formulas.normalize(shape)
local sbh = 512 * 2 * 1024
local a, n, h = 16, 512, 1024

-- collectives per block and microbatch
local c1 = parallel.block_comm(s, 8, false)
H.eq(#c1.fwd, 2, "no SP: two forward collectives"); H.eq(#c1.bwd, 2, "and two backward")
for _, c in ipairs(c1.fwd) do H.eq(c.op, "allreduce"); H.eq(c.bytes, 2 * sbh, "all-reduce of s*b*h") end
for _, c in ipairs(c1.bwd) do H.eq(c.op, "allreduce"); H.eq(c.bytes, 2 * sbh) end
local c2 = parallel.block_comm(s, 8, true)
local function count(list, op)
    local k = 0
    for _, c in ipairs(list) do if c.op == op then k = k + 1; H.eq(c.bytes, 2 * sbh) end end
    return k
end
H.eq(count(c2.fwd, "allgather"), 2, "SP forward: 2 all-gathers")
H.eq(count(c2.fwd, "reduce_scatter"), 2, "SP forward: 2 reduce-scatters")
H.eq(count(c2.bwd, "allgather"), 4, "SP backward: 2 all-gathers + 2 repeated for wgrad")
H.eq(count(c2.bwd, "reduce_scatter"), 2, "SP backward: 2 reduce-scatters")
H.eq(#parallel.block_comm(s, 1, false).fwd, 0, "tp = 1: none")

-- activation memory per block (Korthikanti et al. 2022, Table 2)
for _, t in ipairs { 1, 2, 4, 8 } do
    H.near(parallel.block_act_bytes(s, t, false, false), sbh * (10 + 24 / t + 5 * a * n / (h * t)),
        1e-12, "TP: sbh(10 + 24/t + 5as/(ht)), t = " .. t)
    H.near(parallel.block_act_bytes(s, t, true, false), sbh / t * (34 + 5 * a * n / h), 1e-12,
        "TP + SP: sbh/t (34 + 5as/h), t = " .. t)
    H.near(parallel.block_act_bytes(s, t, true, true), 34 * sbh / t, 1e-12,
        "TP + SP + selective: 34sbh/t, t = " .. t)
    H.near(parallel.block_act_bytes(s, t, false, true), sbh * (10 + 24 / t), 1e-12,
        "TP + selective: sbh(10 + 24/t), t = " .. t)
    H.near(parallel.block_kept_bytes(s, t, false), 2 * sbh, 1e-12, "full: 2sbh")
    H.near(parallel.block_kept_bytes(s, t, true), 2 * sbh / t, 1e-12, "full + SP: 2sbh/t")
end
-- t = 1 agrees with the model's own (untensored) formula
H.near(parallel.block_act_bytes(s, 1, false, false), ps.models.formulas.block_act_bytes(s), 1e-12,
    "t = 1: transformer.block_act_bytes")
-- parameters per TP rank: 12h^2 + 13h at t = 1; weights and column biases
-- split, norms (4h) and the two row-parallel biases (2h) replicated
H.near(parallel.block_params(s, 1), 12 * h * h + 13 * h, 1e-12, "12h^2 + 13h")
H.near(parallel.block_params(s, 4), (12 * h * h + 7 * h) / 4 + 6 * h, 1e-12, "per TP rank")

-- the TP collective's time: the event-simulated ring on the TP group, and
-- on a mesh its closed form 2(t-1)(alpha + T/(t beta)) for an all-reduce
local alpha, beta = 2e-6, 300e9
local dev = ps.clusters.device("A100")
local mesh = ps.cluster{ ranks = 16, device = dev, link = { bandwidth = beta, latency = alpha } }
local layers = ps.models.transformer(shape)
for _, t in ipairs { 2, 4, 8 } do
    local r = ps.run{ cluster = mesh, layers = layers, stages = 2, microbatches = 4, tp = t,
        record = "none" }
    local T = 2 * sbh
    local ar = 2 * (t - 1) * (alpha + T / (t * beta))
    H.near(r.tp_comm.fwd, 2 * ar, 1e-9, "block forward: 2 ring all-reduces, closed form, t = " .. t)
    local group = {}
    for k = 0, t - 1 do group[#group + 1] = k end
    local sim = ps.collective{ cluster = mesh, op = "allreduce", algorithm = "ring", bytes = T,
        ranks = group, record = "none" }
    H.near(r.tp_comm.fwd, 2 * sim.time, 1e-12, "= the event-simulated ps.collective, t = " .. t)
    local rs = ps.run{ cluster = mesh, layers = layers, stages = 2, microbatches = 4, tp = t,
        sequence_parallel = true, record = "none" }
    local ag = (t - 1) * (alpha + T / (t * beta))
    H.near(rs.tp_comm.fwd, 4 * ag, 1e-9, "SP forward: 2 AG + 2 RS, t = " .. t)
    H.near(rs.tp_comm.bwd, 6 * ag, 1e-9, "SP backward: 4 AG + 2 RS, t = " .. t)
end

-- placement: rank = tp_rank + t (dp_rank + d pp_rank), one core rank per
-- TP group (its TP rank 0), index j * p + r
local node = ps.clusters.dgx("A100", 1)
local c8 = ps.cluster(node)
local r = ps.run{ cluster = c8, layers = layers, stages = 2, dp = 2, microbatches = 4, tp = 2,
    record = "none" }
H.eq(r.rank, { 0, 4, 2, 6 }, "TP innermost, then DP, then PP")
H.eq(r.tp_groups[1], { 0, 1 }); H.eq(r.tp_groups[2], { 4, 5 }); H.eq(r.tp_groups[3], { 2, 3 })
H.eq(r.tp, 2); H.eq(r.sequence_parallel, false); H.eq(r.recompute, "none")
local rp = ps.run{ cluster = c8, layers = layers, stages = 2, dp = 2, microbatches = 4, tp = 2,
    placement = "pp_inner", record = "none" }
H.eq(rp.rank, { 0, 2, 4, 6 }, "pp_inner: TP, then PP, then DP")
local rr = ps.run{ cluster = c8, layers = layers, stages = 2, microbatches = 4, tp = 2,
    ranks = { 7, 6, 5, 4 }, record = "none" }
H.eq(rr.rank, { 7, 5 }, "ranks: TP rank innermost"); H.eq(rr.tp_groups[2], { 5, 4 })

-- the rule itself (parallel.cluster_rank) on Megatron-LM's own example
-- (megatron/core/parallel_state.py, initialize_model_parallel's docstring:
-- 16 GPUs, tp 2, pp 4, so dp 2): tensor groups [g0, g1], [g2, g3], ...;
-- pipeline groups [g0, g4, g8, g12], [g1, g5, g9, g13], ...; data-parallel
-- groups [g0, g2], [g1, g3], [g4, g6], ...
do
    local function at(placement, stage, j, k) return parallel.cluster_rank(nil, placement, 4, 2, 2, stage, j, k) end
    local pipe, data, tensor = {}, {}, {}
    for stage = 0, 3 do pipe[#pipe + 1] = at(nil, stage, 0, 1) end
    for j = 0, 1 do data[#data + 1] = at("dp_inner", 2, j, 0) end
    for k = 0, 1 do tensor[#tensor + 1] = at(nil, 3, 1, k) end
    H.eq(pipe, { 1, 5, 9, 13 }, "Megatron: pipeline group [g1, g5, g9, g13]")
    H.eq(data, { 8, 10 }, "Megatron: data-parallel group [g8, g10]")
    H.eq(tensor, { 14, 15 }, "Megatron: tensor group [g14, g15]")
    H.eq(at("pp_inner", 3, 1, 1), 1 + 2 * (3 + 4 * 1), "pp_inner: k + t (r + p j)")
    local list = {}
    for i = 1, 16 do list[i] = 100 + i end
    H.eq(parallel.cluster_rank(list, nil, 4, 2, 2, 3, 1, 1), 100 + (1 * 4 + 3) * 2 + 1 + 1,
        "a ranks list: TP rank innermost, then stage, then replica")
end

-- static memory: each rank's parameters / t (16 B per parameter)
local one = ps.cluster{ ranks = 8, device = dev, link = { bandwidth = beta, latency = alpha } }
local r4 = ps.run{ cluster = one, layers = layers, stages = 1, microbatches = 1, tp = 4,
    record = "none" }
local want = 1024 * 1024 / 4 + 512 * 1024 + 4 * parallel.block_params(s, 4)
    + 1024 * 1024 / 4 + 2 * 1024
H.near(r4.static_memory[1], 16 * want, 1e-12, "static memory of a TP rank")
-- one stage, one microbatch: peak = static + every layer's activations
local act = 4 * parallel.block_act_bytes(s, 4, false, false)
    + sbh                                  -- embedding dropout mask
    + 2 * 2 * sbh + 4 * 512 * 2 * 1024 / 4 -- head: norm and LM-head inputs, fp32 logits / t
H.near(r4.peak_memory[1] - r4.static_memory[1], act, 1e-12, "peak activations of a TP rank")

-- recompute: memory none > selective > full with microbatches in flight
local peak = {}
for _, mode in ipairs { "none", "selective", "full" } do
    local x = ps.run{ cluster = one, layers = layers, stages = 2, microbatches = 8, tp = 4,
        recompute = mode, sequence_parallel = true, record = "none" }
    peak[mode] = x.peak_memory[1]
    H.eq(x.recompute, mode)
end
H.check(peak.none > peak.selective and peak.selective > peak.full, string.format(
    "peak memory none %.0f > selective %.0f > full %.0f", peak.none, peak.selective, peak.full))
-- checkpoint = true is recompute = "full"
local ck = ps.run{ cluster = one, layers = layers, stages = 2, microbatches = 8, tp = 4,
    checkpoint = true, sequence_parallel = true, record = "none" }
H.eq(ck.peak_memory[1], peak.full, "checkpoint = true is recompute = 'full'")
H.eq(ck.recompute, "full")

-- a TP group larger than a node is costed on the links it crosses: the
-- same event-simulated ring on its 16 ranks, slower than inside one node
local two = ps.cluster(ps.clusters.dgx("A100", 2))
local big = ps.models.transformer { layers = 2, hidden = 1024, heads = 16, seq = 512, vocab = 1024 }
local r16 = ps.run{ cluster = two, layers = big, stages = 1, microbatches = 1, tp = 16,
    record = "none" }
local r8 = ps.run{ cluster = two, layers = big, stages = 1, microbatches = 1, tp = 8,
    record = "none" }
local all16 = {}
for k = 0, 15 do all16[#all16 + 1] = k end
-- (protocol "none": the TP path's, until it takes coll_default_protocol)
local ar16 = ps.collective{ cluster = two, op = "allreduce", algorithm = "ring",
    bytes = 2 * 512 * 1024, ranks = all16, record = "none", protocol = "none" }
H.near(r16.tp_comm.fwd, 2 * ar16.time, 1e-12, "tp = 16 over two nodes: the ring on its 16 ranks")
H.check(r16.tp_comm.fwd > r8.tp_comm.fwd, "crossing the NICs costs more than NVLink")

-- tp_overlap: the collectives hide behind the GEMMs, never more than all
local ro = ps.run{ cluster = one, layers = layers, stages = 2, microbatches = 8, tp = 4,
    tp_overlap = true, record = "none" }
local rb = ps.run{ cluster = one, layers = layers, stages = 2, microbatches = 8, tp = 4,
    record = "none" }
H.check(ro.tp_comm.exposed < rb.tp_comm.exposed and ro.tp_comm.exposed >= 0,
    string.format("tp_overlap exposes %.3g s of %.3g s", ro.tp_comm.exposed, rb.tp_comm.exposed))
H.near(rb.tp_comm.exposed, rb.tp_comm.fwd + rb.tp_comm.bwd, 1e-12, "blocking: all exposed")
H.check(ro.makespan < rb.makespan, "tp_overlap shortens the step")

-- recompute methods (Megatron's --recompute-method): uniform with k = 2
-- keeps half the checkpoints of k = 1; block with k = 1 recomputes one
-- block per stage and keeps the others whole
local deep = ps.models.transformer { layers = 8, hidden = 1024, heads = 16, seq = 512,
    vocab = 1024, microbatch = 2, dtype = "fp16" }
local function peak_with(extra)
    local x = ps.run(F.with({ cluster = one, layers = deep, stages = 2, microbatches = 8, tp = 4,
        sequence_parallel = true, recompute = "full", record = "none", partition = { 5, 5 } }, extra))
    return x.peak_memory[1], x.makespan
end
local u1, tu1 = peak_with {}
local u2 = peak_with { recompute_layers = 2 }
local b1, tb1 = peak_with { recompute_method = "block", recompute_layers = 1 }
local b4, tb4 = peak_with { recompute_method = "block", recompute_layers = 4 }
H.check(u1 < b1, "block k = 1 keeps more than uniform k = 1")
H.eq(b4, u1, "block with every block of the stage = uniform k = 1")
H.near(tb4, tu1, 1e-12, "and the same recompute time")
H.check(tb1 < tu1, "recomputing fewer blocks is faster")
H.check(u2 ~= u1, "uniform k = 2 differs from k = 1 (fewer checkpoints, larger units)")

H.done()
