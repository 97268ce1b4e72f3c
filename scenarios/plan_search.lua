-- Plan search (README "Plan search"): GPT-3 175B on 1024 A100 80GB GPUs
-- (128 DGX A100 nodes), global batch 1536 sequences of 2048 tokens (GPT-3's
-- 3.2M-token batch, Brown et al. 2020 Table 2.1), over TP x PP x v x
-- micro-batch x schedule x recompute x ZeRO-1: 10,080 raw configurations.
-- ps.search removes what Megatron-LM would reject, drops what the closed-
-- form memory model says cannot fit, and simulates the rest in order of a
-- step-time lower bound, skipping only configurations the bound proves can
-- be neither the best nor on the Pareto front.
--   pipesim run scenarios/plan_search.lua -o search.db
--   pipesim run scenarios/plan_search.lua -D prune=none   (simulate every one)
--   sqlite3 -header -column search.db < results/queries/best_plan.sql
-- -D quick=1 (the test suite) searches a small GPT on 4 nodes instead.
local ps = require "pipesim"

local quick = ps.args.quick
local spec
if ps.args.llama405 then
    -- Llama 3 405B on 16,384 H100 (2,048 DGX H100 nodes) with its
    -- published batch: 16M tokens of 8,192 = 2,048 sequences (Dubey et al.
    -- 2024, Table 4), in BF16 with fused attention (context parallelism
    -- needs it). Meta's plan, TP 8, CP 1, PP 16, DP 128 interleaved, is in
    -- the space; the 126 layers split over 16 stages with the embedding
    -- and the loss counted as layers (one block fewer on the first and the
    -- last stage, as Meta's). Every schedule and ZeRO stage: 4 x 7 x 2 x 4
    -- x 4 x 11 x 3 x 4 = 118,272 raw configurations; only the best is
    -- sought (pareto = false). -D with_cp=1 adds cp {2, 4, 8} with Meta's
    -- all-gather attention (cp_comm_type all_gather, Dubey et al. 2024
    -- section 3.3.2); most of them are too large to simulate at 16,384
    -- GPUs on main's simulator, as are ZeRO-2/3 at large dp (status "too
    -- large", res.unproven; docs/search.md).
    local shape = ps.models.shape("llama3-405b")
    shape.flash_attention = true
    spec = { name = "llama3-405b", model = shape, cluster = ps.cluster(ps.clusters.dgx("H100", 2048)),
             gpus = 16384, global_batch = 2048, pareto = false,
             space = { tp = { 1, 2, 4, 8 }, pp = { 1, 2, 4, 8, 16, 32, 64 },
                       cp = ps.args.with_cp and { 1, 2, 4, 8 } or nil,
                       cp_comm_type = ps.args.with_cp and { "all_gather" } or nil,
                       sequence_parallel = { true, false },
                       virtual_stages = { 1, 2, 4, 8 }, microbatch = { 1, 2, 4, 8 },
                       schedule = { "gpipe", "1f1b", "interleaved", "zb_h1", "zb_h2", "looped_bfs",
                                   "interleaved_pytorch", "interleaved_zb", "zbv", "dualpipev",
                                   "dualpipe" },
                       recompute = { "none", "selective", "full" },
                       zero = { 0, 1, 2, 3 } } }
elseif quick then
    spec = { name = "gpt-1.7b", model = "gpt-1.7b", cluster = ps.cluster(ps.clusters.dgx("A100", 4)),
               gpus = 32, global_batch = 64,
               space = { tp = { 2, 4, 8 }, pp = { 1, 2, 4 }, virtual_stages = { 1, 2 },
                           microbatch = { 1, 2 }, schedule = { "1f1b", "interleaved" },
                           recompute = { "selective", "full" }, zero = { 1 } } }
else
    spec = { name = "gpt3-175b", model = "gpt3-175b", cluster = ps.cluster(ps.clusters.dgx("A100", 128)),
               gpus = 1024, global_batch = 1536,
               space = { tp = { 1, 2, 4, 8 }, pp = { 1, 2, 4, 8, 16, 32, 64 },
                           virtual_stages = { 1, 2, 3, 4, 6 }, microbatch = { 1, 2, 4, 8 },
                           schedule = { "1f1b", "interleaved", "gpipe" },
                           recompute = { "none", "selective", "full" }, zero = { 0, 1 } } }
end
spec.prune = ps.args.prune
-- the quick search is small: one process (worker scratch directories in
-- $TMPDIR would be seen by a concurrent test suite's check for leftovers)
spec.jobs = ps.args.jobs or (quick and 1 or nil)

local res = ps.search(spec)

print(string.format("%s on %d GPUs, global batch %d: %d raw configurations", spec.name,
    spec.gpus, spec.global_batch, res.raw))
local reasons = {}
for k in pairs(res.dropped) do reasons[#reasons + 1] = k end
table.sort(reasons)
for _, k in ipairs(reasons) do print(string.format("  dropped %-15s %6d", k, res.dropped[k])) end
print(string.format("  valid and fitting %5d: simulated %d, skipped by the bound %d",
    res.valid, res.simulated, res.pruned))
if res.relaxed > 0 then
    -- plans too large or costly, first simulated with one replica
    -- (docs/search.md, "The relaxed bound")
    print(string.format("  relaxed (one replica simulated) %d", res.relaxed))
end
if res.unproven > 0 then
    print(string.format("  unproven %d: failed or too large to simulate, with a bound below the best",
        res.unproven))
end
if res.shard then
    -- --shard K/N with prune = "none": this shard's configurations only
    print(string.format("  shard %d/%d: %d of them are the other shards'", res.shard.k,
        res.shard.n, res.valid - res.simulated))
end
if ps.args.cpu then
    -- where the main process's CPU went (workers' not counted)
    print(string.format("  cpu: enumerate %.2f s, constraints %.2f s, cost %.2f s, simulate %.2f s",
        res.cpu.enumerate, res.cpu.constraints, res.cpu.cost, res.cpu.simulate))
end
local function row(r)
    return string.format("  %-48s %8.3f s %8.1f GiB", r.label, r.step_time, r.peak_memory / 2 ^ 30)
end
print("best:")
print(res.best and row(res.best) or "  none (no configuration of this shard fits)")
print("Pareto front (step time against peak memory):")
for _, r in ipairs(res.pareto) do print(row(r)) end

if ps.args.llama405 then
    -- Meta's plan simulated the same way: its layout (TP 8, CP 1, PP 16,
    -- DP 128, interleaved) with the virtual stages, recompute and ZeRO-1
    -- that fit, the best of them; the search's best must be no slower
    local meta = ps.search { name = "llama3-405b meta", model = spec.model, cluster = spec.cluster,
        gpus = spec.gpus, global_batch = spec.global_batch, pareto = false,
        space = { tp = { 8 }, cp = { 1 }, pp = { 16 }, virtual_stages = { 2, 4, 8 },
                  schedule = { "interleaved" }, recompute = { "none", "selective", "full" },
                  zero = { 0, 1 }, sequence_parallel = { true, false } } }
    print("Meta's plan (TP 8, CP 1, PP 16, DP 128, interleaved), its best variant that fits:")
    print(row(meta.best))
    print(string.format("the search's best is %.1f%% faster", 100 * (1 - res.best.step_time / meta.best.step_time)))
    if res.best.step_time > meta.best.step_time then
        error(string.format("the search's best (%s, %.3f s) is slower than Meta's plan (%s, %.3f s)",
            res.best.label, res.best.step_time, meta.best.label, meta.best.step_time))
    end
end
