-- Fixtures the Lua tests share: copies of tables with fields over them,
-- lists of identical layers, an alpha-beta mesh, sums, and the brute-force
-- best split that the partition searches are held against. Load it as
-- `local F = require "fixtures"` (beside `local H = require "harness"`).
local M = {}

-- with(base, extra): a shallow copy of base with extra's fields set over
-- it (extra may be nil). The tests vary one ps.run or ps.collective table.
function M.with(base, extra)
    local t = {}
    for k, v in pairs(base) do t[k] = v end
    for k, v in pairs(extra or {}) do t[k] = v end
    return t
end

-- layers(n, fields): n layers, each its own copy of fields (default one
-- second forward: { fwd_time = 1 }); fields may be a function of the
-- layer's index (from 1) returning its table.
function M.layers(n, fields)
    fields = fields or { fwd_time = 1 }
    local l = {}
    for i = 1, n do
        l[i] = M.with(type(fields) == "function" and fields(i) or fields)
    end
    return l
end

-- mesh(n, bandwidth, latency): n ranks, every ordered pair with its own
-- link, the network the textbook alpha-beta formulas assume. (pipesim is
-- required where it is used, so the rest of this file also loads under a
-- plain lua5.4, as the harness does.)
function M.mesh(n, bandwidth, latency)
    return require("pipesim").cluster{ ranks = n, link = { bandwidth = bandwidth, latency = latency } }
end

function M.sum(t)
    local x = 0
    for _, v in ipairs(t) do x = x + v end
    return x
end

function M.max(t)
    local x = -math.huge
    for _, v in ipairs(t) do x = math.max(x, v) end
    return x
end

-- brute_partition(run): the smallest makespan of run over every split
-- of its layers into stages x virtual_stages chunks, simulated without
-- recording; splits that fail to run (memory, say) are passed over.
-- Returns the makespan, its split, and how many splits there were.
function M.brute_partition(run)
    local ps = require "pipesim"
    local best, where, n = math.huge, nil, 0
    local stages = run.stages * (run.virtual_stages or 1)
    for counts in ps.partition.enumerate(#run.layers, stages) do
        local ok, r = pcall(ps.run, M.with(run, { partition = counts, record = "none" }))
        n = n + 1
        if ok and r.makespan < best then best, where = r.makespan, counts end
    end
    return best, where, n
end

-- labels(rows): the label of each of ps.search's rows, in order.
function M.labels(rows)
    local out = {}
    for i, r in ipairs(rows) do out[i] = r.label end
    return out
end

-- same_search(H, all, pruned): a search pruned by its bound found the
-- best and the Pareto front of the same search with prune = "none", and
-- simulated fewer configurations.
function M.same_search(H, all, pruned)
    H.eq(pruned.best.label, all.best.label, "bound pruning finds the brute-force best")
    H.eq(pruned.best.step_time, all.best.step_time)
    H.eq(M.labels(pruned.pareto), M.labels(all.pareto), "and the same Pareto front")
    H.check(pruned.simulated < all.simulated,
        string.format("pruning simulates fewer (%d of %d)", pruned.simulated, all.simulated))
end

return M
