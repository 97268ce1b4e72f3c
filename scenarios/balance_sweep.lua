-- balance_sweep: where should a GPT's layers go on 4 pipeline stages?
--
-- The embedding table holds vocab x hidden parameters but does no matmul;
-- the output head holds as many and does 2*b*s*h*V FLOPs. Balancing stages
-- by parameters therefore treats the embedding as a couple of blocks of
-- work and gives stage 0 too few blocks; balancing by FLOPs does not. This
-- scenario runs both, then every contiguous partition (ps.partition.
-- enumerate, record = "summary"), prints the comparison and a conclusion
-- computed from the numbers, and leaves the runs for the canned query:
--
--   sqlite3 -header -column results/balance_sweep.db \
--       < results/queries/best_partition.sql
--
-- Run names are "<model>/<how>" (how = uniform, params, flops, sweep); the
-- query keeps the fastest run per model. A second table repeats the
-- comparison over the GPT-3 sizes: the smaller hidden is next to the 50k
-- vocabulary, the more parameter balance costs. -D quick=1 sweeps only the
-- main model (CI); the full scenario runs ~20,000 steps in a few seconds.
local ps = require "pipesim"

local quick = ps.args.quick
local P, M = 4, 8 -- pipeline stages, microbatches

-- One DGX A100 node; the 4 stages sit on 4 of its GPUs and talk over
-- NVLink (the preset's intra-node link, 300 GB/s per direction, 2 us).
local node = ps.clusters.dgx("A100", 1)
local cluster = ps.cluster{ ranks = P, device = node.device, link = node.intra }
local rate = cluster.flops_rate -- peak x efficiency, FLOP/s

-- GPT-3 shapes (Brown et al. 2020, Table 2.1): 2048-token context, GPT-2
-- BPE vocabulary of 50257. XL is Megatron-LM's 1.3B example (16 heads of
-- 128; the paper lists 24 heads of 128, which does not divide 2048).
local MODELS = {
    { key = "gpt3-medium", label = "GPT-3 Medium 350M", layers = 24, hidden = 1024, heads = 16 },
    { key = "gpt3-large", label = "GPT-3 Large 760M", layers = 24, hidden = 1536, heads = 16 },
    { key = "gpt3-xl", label = "GPT-3 XL 1.3B", layers = 24, hidden = 2048, heads = 16 },
    { key = "gpt3-2.7b", label = "GPT-3 2.7B", layers = 32, hidden = 2560, heads = 32 },
    { key = "gpt3-6.7b", label = "GPT-3 6.7B", layers = 32, hidden = 4096, heads = 32 },
}
local MAIN = "gpt3-xl"

local function build(m)
    return ps.models.transformer{ layers = m.layers, hidden = m.hidden,
        heads = m.heads, seq = 2048, vocab = 50257, microbatch = 1 }
end

local function braces(counts)
    return "{" .. table.concat(counts, ",") .. "}"
end

local function step(model, layers, how, partition)
    return ps.run{ name = model.key .. "/" .. how, cluster = cluster,
        layers = layers, stages = P, microbatches = M, schedule = "1f1b",
        partition = partition, record = "summary" }
end

-- Per-stage sums of a per-layer quantity for a partition.
local function per_stage(counts, weights)
    return ps.partition.stats(counts, weights).sums
end

-- Runs uniform, params, flops and (unless skip_sweep) every partition.
-- Returns { [how] = { counts, r } } with how = uniform, params, flops, best.
local function compare(model, skip_sweep)
    local layers = build(model)
    local out = { layers = layers }
    for _, how in ipairs { "uniform", "params", "flops" } do
        local counts = ps.partition.resolve(how, layers, P)
        out[how] = { counts = counts, r = step(model, layers, how, how) }
    end
    if not skip_sweep then
        local best, n = nil, 0
        for counts in ps.partition.enumerate(#layers, P) do
            local r = step(model, layers, "sweep", counts)
            n = n + 1
            if not best or r.makespan < best.r.makespan then
                best = { counts = counts, r = r }
            end
        end
        out.best, out.swept = best, n
    end
    return out
end

---------------------------------------------------------------------------
-- The main model, in detail
---------------------------------------------------------------------------
local main
for _, m in ipairs(MODELS) do
    if m.key == MAIN then main = m end
end
local res = compare(main, false)
local layers = res.layers
local params_w, time_w = {}, {}
for i, l in ipairs(layers) do
    params_w[i] = l.params
    time_w[i] = (l.fwd_flops + (l.bwd_flops or 2 * l.fwd_flops)) / rate
end
local block = layers[2]

print(string.format("%s (%d blocks, h=%d, %d heads, vocab 50257, seq 2048, "
    .. "microbatch 1) on %d x %s, 1F1B, %d microbatches",
    main.label, main.layers, main.hidden, main.heads, P, node.device.name, M))
print(string.format("embedding: %.0fM parameters (%.2f blocks' worth), 0 FLOPs; "
    .. "head: %.0fM parameters, %.2f blocks' worth of FLOPs",
    layers[1].params / 1e6, layers[1].params / block.params,
    layers[#layers].params / 1e6, layers[#layers].fwd_flops / block.fwd_flops))
print()
print(string.format("%-11s %-11s %-23s %-27s %9s %7s %9s", "balance by",
    "partition", "params per stage (M)", "fwd+bwd per stage (ms)", "step",
    "bubble", "imbalance"))
local rows = {
    { "uniform", res.uniform }, { "params", res.params }, { "flops", res.flops },
    { "sweep best", res.best },
}
for _, row in ipairs(rows) do
    local how, x = row[1], row[2]
    local p, t = {}, {}
    for s, v in ipairs(per_stage(x.counts, params_w)) do p[s] = string.format("%.0f", v / 1e6) end
    for s, v in ipairs(per_stage(x.counts, time_w)) do t[s] = string.format("%.1f", v * 1e3) end
    print(string.format("%-11s %-11s %-23s %-27s %9s %7s %9.3f", how, braces(x.counts),
        table.concat(p, " "), table.concat(t, " "), ps.seconds(x.r.makespan),
        ps.pct(x.r.bubble), x.r.imbalance))
end

-- The conclusion, from the numbers above.
local pr, fr, br = res.params.r, res.flops.r, res.best.r
local function share(counts, w, s)
    local sums, total = per_stage(counts, w), 0
    for _, v in ipairs(sums) do total = total + v end
    return sums[s] / total
end
print()
print(string.format("conclusion: balancing by parameters gives stage 0 %.0f%% of "
    .. "the parameters but %.0f%% of the compute, and the step takes %s, %.1f%% %s "
    .. "than balancing by FLOPs (%s); the best of all %d partitions, %s, takes %s "
    .. "(%.1f%% faster than FLOP balance)",
    100 * share(res.params.counts, params_w, 1), 100 * share(res.params.counts, time_w, 1),
    ps.seconds(pr.makespan), 100 * math.abs(pr.makespan / fr.makespan - 1),
    pr.makespan > fr.makespan and "slower" or "faster", ps.seconds(fr.makespan),
    res.swept, braces(res.best.counts), ps.seconds(br.makespan),
    100 * (1 - br.makespan / fr.makespan)))

-- Why the best can beat FLOP balance: both have the same bottleneck, but
-- 1F1B overlaps an early stage's extra work with the pipeline's fill, so
-- the heaviest stage is better first than last.
local bt = per_stage(res.best.counts, time_w)
local heaviest = 1
for s = 2, #bt do if bt[s] > bt[heaviest] then heaviest = s end end
print(string.format("the best split's heaviest stage is stage %d: with 1F1B, extra "
    .. "work on an early stage overlaps the pipeline's fill and drain", heaviest - 1))

---------------------------------------------------------------------------
-- The same comparison over the GPT-3 sizes
---------------------------------------------------------------------------
print()
print(string.format("%-18s %9s  %-11s %9s  %-11s %9s  %-11s %9s  %10s",
    "model", "emb/block", "params", "step", "flops", "step", "best", "step",
    "params vs flops"))
local worst, mildest
for _, m in ipairs(MODELS) do
    local x = m.key == MAIN and res or compare(m, quick)
    local l = x.layers
    local best_counts = x.best and braces(x.best.counts) or "(skipped)"
    local best_step = x.best and ps.seconds(x.best.r.makespan) or "-"
    print(string.format("%-18s %9.2f  %-11s %9s  %-11s %9s  %-11s %9s  %+9.1f%%",
        m.label, l[1].params / l[2].params, braces(x.params.counts),
        ps.seconds(x.params.r.makespan), braces(x.flops.counts),
        ps.seconds(x.flops.r.makespan), best_counts, best_step,
        100 * (x.params.r.makespan / x.flops.r.makespan - 1)))
    local row = { label = m.label, emb = l[1].params / l[2].params,
                    cost = x.params.r.makespan / x.flops.r.makespan - 1 }
    if not worst or row.cost > worst.cost then worst = row end
    if not mildest or row.cost < mildest.cost then mildest = row end
end
print(string.format("parameter balance costs %+.1f%% on %s (embedding = %.2f blocks of "
    .. "parameters) and %+.1f%% on %s (%.2f blocks): the larger the vocabulary "
    .. "next to the hidden size, the more it misleads",
    100 * worst.cost, worst.label, worst.emb, 100 * mildest.cost, mildest.label, mildest.emb))
print()
print("pick the best per model: sqlite3 -header -column results/balance_sweep.db "
    .. "< results/queries/best_partition.sql")
