-- tests/cli_sweep_memo.sh: the same runs as one ps.sweep with `base`
-- (default) or as a plain ps.run loop (-D loop=true; -D batch=true: that
-- loop inside ps.batch, committed together). The databases must
-- hold the same rows apart from the sweep columns: the sweep's memo
-- (layers checked and lowered once, run.params fields kept from the first
-- point) changes no row. The points vary fields whose JSON text is subtle
-- (1 and 1.0, 2^60 as a float and an integer, 0.0 and -0.0) and the key
-- set, over model and plain layers, plain points after others.
local ps = require "pipesim"

-- the space's cluster and layers, shared with tests/lua/test_sweep_memo.lua
local space = dofile("tests/data/sweep_memo_space.lua")
local cluster, model, plain = space.cluster, space.model, space.plain
local groups = {
    { base = { name = "model", cluster = cluster, layers = model, stages = 4, microbatches = 8,
               record = "summary" },
      points = { { partition = { 1, 12, 9, 12 } }, { partition = "time" }, { tp = 2 },
                 { recompute = "full" }, { stages = 2, dp = 2 }, { optimizer_time = 1 },
                 { optimizer_time = 1.0 }, { optimizer_time = 2 ^ 60 },
                 { optimizer_time = math.tointeger(2 ^ 60) }, { partition = { 8, 8, 8, 10 } },
                 -- points setting only fields outside what ps.run keeps per
                 -- base sweep ("plain", lua/pipesim/init.lua SHARED_FIELDS)
                 -- reuse the first plain point's plan, check and meta: after
                 -- one with other tags, they still get the base's
                 { tags = { x = 1 } }, { partition = { 1, 12, 9, 12 } } } },
    { base = { name = "plain", layers = plain, stages = 4, microbatches = 6, record = "summary",
               optimizer_time = 0.5 },
      points = { { optimizer_time = 0.0 }, { optimizer_time = -0.0 }, { optimizer_time = 0.0 },
                 { partition = { 1, 2, 2, 3 } }, { partition = { 1, 2, 2, 3 }, checkpoint = false },
                 { microbatches = 3 }, { schedule = "gpipe", record = "events" },
                 { microbatches = 0 } } },
}
local function each(fn) for _, g in ipairs(groups) do fn(g) end end
local function run_all(g)
    if ps.args.loop then
        for _, p in ipairs(g.points) do
            local t = {}
            for k, v in pairs(g.base) do t[k] = v end
            for k, v in pairs(p) do t[k] = v end
            pcall(ps.run, t)
        end
    else
        -- the last point is refused (microbatches = 0): the sweep stops there
        pcall(ps.sweep, { name = g.base.name, base = g.base, points = g.points, jobs = 1 })
    end
end
if ps.args.batch then ps.batch(each, run_all) else each(run_all) end
