-- ps.search over expert parallelism (ep, etp) on a small mixture-of-experts
-- model: the constraints Megatron-LM applies (their drop counts worked out
-- by hand), the closed-form peak equal to the simulated one, the step-time
-- bound below every simulated step, the pruned search's best and front
-- equal to simulating every configuration, and the errors. Runs under
-- `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

-- 4 blocks, 8 experts of top-2, on one DGX H100 node
local model = { layers = 4, hidden = 512, heads = 8, seq = 512, vocab = 8192, tied = true,
                experts = 8, topk = 2, expert_ffn = 1024 }
local node = ps.cluster(ps.clusters.dgx("H100", 1))
local space = { tp = { 1, 2 }, pp = { 1, 2 }, ep = { 1, 2, 4, 8 }, etp = { 1, 2 }, zero = { 0, 1 } }

local labels = F.labels

local all = ps.search { name = "moe", model = model, cluster = node, gpus = 8, global_batch = 16,
    space = space, prune = "none", record = "none" }
-- raw: 2 tp x 2 pp x 4 ep x 2 etp x 2 zero = 64
H.eq(all.raw, 64)
-- expert_world (etp x ep x pp divides the 8 GPUs, Megatron's expert
-- RankGenerator): pp 2 with ep 8 (both etp), pp 2 ep 4 etp 2, pp 1 ep 8
-- etp 2: 4 (pp, ep, etp) x 2 tp x 2 zero = 16; ep always divides the 8
-- experts; etp divides the expert ffn; sequence parallelism is on at tp 2
H.eq(all.dropped.expert_world, 16, "expert_world drops")
H.eq(all.dropped.ep_experts, nil)
H.eq(all.dropped.duplicate, nil, "etp given as 1 and 2: none is tp's default twice")
-- tp 2 with ep 1 etp 1 (the expert data-parallel group across the TP
-- ranks, whose twins the simulator folds) runs: nothing fails in ps.run
H.eq(all.dropped["ps.run"], nil, "tp 2 ep 1 etp 1 simulated")
H.eq(all.valid, 48)
local ok, exact = true, 0
for _, r in ipairs(all.table) do
    if r.status == "simulated" then
        H.near(r.memory, r.peak_memory, 1e-9, "closed-form peak = simulated, " .. r.label)
        exact = exact + 1
        if not (r.bound <= r.step_time * (1 + 1e-12)) then
            ok = false
            H.check(false, string.format("bound %.9g above the step %.9g: %s", r.bound,
                r.step_time, r.label))
        end
    else
        H.check(false, r.label .. " " .. r.status .. ": " .. tostring(r.error))
    end
end
H.eq(exact, 48, "48 simulated")
H.check(ok, "the bound is below every simulated step")

-- the experts' memory: ep divides the experts' weights, gradients and
-- optimizer state, so at tp 1 pp 1 ZeRO-0 the peak falls with ep
local function row(label)
    for _, r in ipairs(all.table) do
        if r.label == label then return r end
    end
    error("no row " .. label)
end
H.check(row("tp1 pp1 dp8 ep8 v1 mb1 1f1b none zero0").peak_memory <
    row("tp1 pp1 dp8 ep2 v1 mb1 1f1b none zero0").peak_memory, "ep 8 holds less than ep 2")

-- pruning by the bound: the same best and front
local pruned = ps.search { name = "moe pruned", model = model, cluster = node, gpus = 8,
    global_batch = 16, space = space, record = "none" }
F.same_search(H, all, pruned)

H.eq(all.unproven, 0, "the failed plans' bounds are above the best step")
-- a failed plan whose bound is below the best found: the best is not
-- proven (res.unproven, and a warning on stderr)
local un = ps.search { name = "moe unproven", model = model, cluster = node, gpus = 8,
    global_batch = 16, space = { tp = { 2 }, ep = { 2 }, etp = { 1 }, zero = { 0, 2 } },
    record = "none" }
H.eq(un.dropped["ps.run"], 1)
H.eq(un.best.label, "tp2 pp1 dp4 ep2 etp1 v1 mb1 1f1b none zero0 sp")
H.eq(un.unproven, 1, "zero 2 with ep 2 failed with a bound below the best's step")

-- etp equal to tp is its default: given both ways it is one configuration
local dup = ps.search { name = "moe dup", model = model, cluster = node, gpus = 8, global_batch = 16,
    space = { tp = { 2 }, ep = { 2 }, etp = { 1, 2 } }, record = "none", prune = "none" }
H.eq(dup.raw, 2); H.eq(dup.valid, 2)
H.eq(labels(dup.table), { "tp2 pp1 dp4 ep2 etp1 v1 mb1 1f1b none zero0 sp",
    "tp2 pp1 dp4 ep2 v1 mb1 1f1b none zero0 sp" })

-- errors: one line naming the field
local base = { model = model, cluster = node, gpus = 8, global_batch = 16 }
H.raises(function() ps.search(F.with(base, { space = { ep = { 3 } } })) end,
    "ps.search: no valid configuration: constraint 'ep_experts' removed the last 1 candidates " ..
    "(ep does not divide the 8 experts")
H.raises(function() ps.search(F.with(base, { space = { ep = { 0 } } })) end,
    "ps.search: space.ep[1] must be a positive integer, got 0")
H.raises(function() ps.search(F.with(base, { space = { etp = { 3 } } })) end,
    "ps.search: no valid configuration: constraint 'expert_world' removed the last 1 candidates")
H.raises(function() ps.search(F.with(base, { space = { tp = { 2 }, sequence_parallel = { false } } })) end,
    "ps.search: no valid configuration: constraint 'moe_sp' removed the last 1 candidates " ..
    "(a MoE model under tensor parallelism needs sequence parallelism")
H.raises(function() ps.search(F.with(base, { space = { epp = { 2 } } })) end,
    "ps.search: space: unknown field 'epp' (did you mean 'ep'?)")
local dense = F.with(model, {})
dense.experts, dense.topk, dense.expert_ffn = nil, nil, nil
H.raises(function() ps.search(F.with(base, { model = dense, space = { ep = { 2 } } })) end,
    "ps.search: space.ep needs a model with experts (a mixture-of-experts shape: ps.models, " ..
    "docs/moe.md); this one has none")
H.done()
