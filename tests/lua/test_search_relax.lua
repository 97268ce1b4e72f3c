-- ps.search's relaxed bound (lua/pipesim/search_relax.lua): the same plan
-- with one data-parallel replica and the same microbatches, simulated, is
-- below the plan's simulated step on every plan of two searches over tp,
-- cp, pp, virtual stages, schedule, recompute and ZeRO 0, 1 and 3 on four
-- DGX H100 nodes; a search whose size guard leaves plans unsimulated proves
-- some out by it, skips none faster than its best, and counts as unproven
-- exactly the rows whose bound and relaxation are both below the best.
-- Runs under `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"

local cluster = ps.cluster(ps.clusters.dgx("H100", 4))

-- the plan of row r with one replica and r's microbatches, simulated
local function one_replica(model, r)
    local one = ps.search { name = "one replica", model = model, cluster = cluster,
        gpus = r.tp * r.cp * r.pp, global_batch = r.microbatches * r.microbatch,
        space = { tp = { r.tp }, cp = { r.cp }, pp = { r.pp }, virtual_stages = { r.virtual_stages },
                  microbatch = { r.microbatch }, schedule = { r.schedule },
                  recompute = { r.recompute }, sequence_parallel = { r.sequence_parallel },
                  -- ZeRO at dp x cp = 1 changes nothing (the search drops it)
                  zero = { r.cp > 1 and r.zero or 0 } },
        prune = "none", record = "none" }
    H.eq(one.simulated, 1, r.label)
    return one.table[1].step_time
end

local function all_below(name, model, space)
    local all = ps.search { name = name, model = model, cluster = cluster, gpus = 32,
        global_batch = 64, space = space, prune = "none", record = "none" }
    H.eq(all.simulated, all.valid, name .. ": every valid plan simulated")
    local ok, cp_rows, relaxed = true, 0, {}
    for _, r in ipairs(all.table) do
        local x = one_replica(model, r)
        relaxed[r.label] = x
        if r.cp > 1 then cp_rows = cp_rows + 1 end
        if not (x <= r.step_time * (1 + 1e-12)) then
            ok = false
            H.check(false, string.format("%s: one replica %.9g above the step %.9g", r.label, x,
                r.step_time))
        end
    end
    H.check(ok, string.format("%s: one replica below the step on all %d plans", name, all.simulated))
    H.check(cp_rows > 0, name .. ": with context parallelism among them")
    return all, relaxed
end

-- a small GPT, where the gradient sync is most of the step
local small = { layers = 8, hidden = 512, heads = 8, kv_heads = 4, seq = 512, vocab = 8192,
                tied = true, flash_attention = true }
all_below("small", small, { tp = { 1, 2, 8 }, cp = { 1, 2 }, pp = { 1, 2, 4 }, zero = { 0, 1, 3 },
    schedule = { "1f1b", "interleaved", "zb_h1" }, virtual_stages = { 1, 2 } })

-- a wider one, where compute is, as at scale
local wide = { layers = 8, hidden = 4096, heads = 32, kv_heads = 8, seq = 4096, vocab = 32000,
               flash_attention = true }
local space = { tp = { 2, 8 }, cp = { 1, 2 }, pp = { 1, 2, 4 }, zero = { 0, 1 },
    schedule = { "1f1b", "interleaved", "zb_h1" }, virtual_stages = { 1, 2 },
    recompute = { "none", "full" } }
local all, relaxed = all_below("wide", wide, space)

-- the size guard at 600 steps leaves the larger plans unsimulated, the
-- brute-force best among them; their relaxation (the same figure as
-- one_replica's) proves some out, every plan skipped is slower than the
-- best found, and the brute-force best is among the unproven
local pr = ps.search { name = "guarded", model = wide, cluster = cluster, gpus = 32,
    global_batch = 64, space = space, record = "none", pareto = false, max_collective_steps = 600 }
local step_of, status = {}, {}
for _, r in ipairs(all.table) do step_of[r.label] = r.step_time end
local by_relax, unproven, safe = 0, 0, true
for _, r in ipairs(pr.table) do
    status[r.label] = r.status
    if r.relaxed then
        H.eq(r.relaxed, relaxed[r.label], "relaxed = one replica simulated: " .. r.label)
        if r.status == "pruned" and r.bound < pr.best.step_time then
            by_relax = by_relax + 1
            H.check(r.relaxed >= pr.best.step_time, r.label)
        end
    end
    if r.status == "pruned" and step_of[r.label] < pr.best.step_time then
        safe = false
        H.check(false, "pruned but faster than the best: " .. r.label)
    end
    if r.status == "too large" and math.max(r.bound, r.relaxed or 0) < pr.best.step_time then
        unproven = unproven + 1
    end
end
H.check(safe, "every pruned plan is slower than the best found")
H.check(by_relax > 0, string.format("%d too large plans proven out by their relaxation", by_relax))
H.eq(pr.unproven, unproven, "unproven: too large, bound and relaxation below the best")
H.check(pr.best.step_time > all.best.step_time, "the brute-force best is too large here")
H.eq(status[all.best.label], "too large", all.best.label)
H.check(pr.unproven > 0, "and so the best is unproven")
H.check(pr.relaxed > 0 and pr.relaxed < pr.valid, "relaxed simulations counted")

H.done()
