-- ps.search's relaxed bound (search.lua calls it): a configuration's step
-- time is at least that of the same plan with one data-parallel replica
-- (dp = 1) running the same microbatches, simulated. The relaxation keeps
-- every replica's own work (its compute, its pipeline transfers, its CP
-- exchange, the same m microbatches of the same size) and takes away what
-- the other replicas add: the gradient sync's and ZeRO's collectives over
-- dp x cp ranks shrink to the cp ranks (none at cp 1), and their traffic
-- on links the replicas share goes. Replica 0's stages sit closer
-- together (tp x cp ranks apart instead of tp x cp x dp: Megatron's
-- tp-cp-dp-pp order), on links no slower. Simulated, it costs a 1/dp
-- share of the plan's ranks, and the simulator builds folded replicas'
-- programs in O(dp^2) (Llama 3 405B at tp 4, cp 4, pp 32, v 4 on 16,384
-- H100: 0.9 GB and 27 s at dp 16, docs/search.md), so it stands in for
-- the plans too large to simulate and for the costly ones whose
-- relaxation already proves they cannot win. It is a bound by that
-- argument, not by construction: tests/lua/test_search_relax.lua checks
-- relaxed <= simulated on every plan of small searches.
local M = {}

-- The relaxed configuration of c: dp 1, the same microbatch count.
function M.config(c)
    local r = {}
    for k, v in pairs(c) do r[k] = v end
    r.dp, r.run, r.row = 1, nil, nil
    return r
end

-- The search spec the relaxed run is built from (search.lua flags): the
-- replica's ranks and its share of the global batch, recorded nowhere.
function M.spec(spec, c)
    local s = {}
    for k, v in pairs(spec) do s[k] = v end
    s.gpus, s.global_batch = c.tp * c.cp * c.pp, c.microbatches * c.microbatch
    s.record, s.db = "none", nil
    return s
end

-- relaxed(c, build, run) -> the relaxed step time, or nil when ps.run
-- refuses the relaxed plan (an expert-parallel layout that needs the
-- replicas, say). build(rc, rspec) builds its ps.run table; run runs it.
-- Memoised on the relaxed configuration's label and microbatch count:
-- ZeRO stages differ only in what the relaxation drops at dp x cp = 1.
function M.step(c, build, run, memo, label)
    local rc = M.config(c)
    local key = label(rc) .. "|" .. rc.microbatches
    local hit = memo[key]
    if hit ~= nil then return hit or nil end
    local ok, r = pcall(run, build(rc, M.spec(memo.spec, c)))
    local t = ok and r.makespan or false
    memo[key] = t
    return t or nil
end

return M
