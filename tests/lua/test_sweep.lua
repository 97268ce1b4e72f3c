-- ps.sweep: the product order (names sorted, the last varying fastest, or
-- `order`), the points and base forms, results in point order with their
-- point and point_index, and the closed form of each point's makespan
-- (uniform stages, f = 1, b = 2: 3(m + p - 1)).
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"

local layers = {}
for i = 1, 4 do layers[i] = { fwd_time = 1, bwd_time = 2 } end

local function spec(p)
    return { layers = layers, stages = p.stages or 4, microbatches = p.microbatches,
               schedule = p.schedule, record = "summary" }
end

-- 1. product order: coordinates sorted by name, the last fastest
do
    local rs = ps.sweep{ name = "order", run = spec,
        space = { schedule = { "gpipe", "1f1b" }, microbatches = { 4, 8, 16 } } }
    H.eq(#rs, 6, "3 x 2 points")
    local want = { { 4, "gpipe" }, { 4, "1f1b" }, { 8, "gpipe" }, { 8, "1f1b" },
                     { 16, "gpipe" }, { 16, "1f1b" } }
    for i, r in ipairs(rs) do
        H.eq({ r.point.microbatches, r.point.schedule }, want[i], "point " .. i)
        H.eq(r.point_index, i - 1, "point_index from 0")
        H.eq(r.microbatches, want[i][1], "result of its own point")
        H.eq(r.makespan, 3 * (want[i][1] + 4 - 1), "3(m + p - 1)")
        H.check(r.id and (i == 1 or r.id == rs[i - 1].id + 1), "ids in point order")
    end
end

-- 2. `order` nests schedule outermost
do
    local rs = ps.sweep{ name = "nested", run = spec, order = { "schedule", "microbatches" },
        space = { schedule = { "gpipe", "1f1b" }, microbatches = { 4, 8 } } }
    local got = {}
    for i, r in ipairs(rs) do got[i] = r.point.schedule .. r.point.microbatches end
    H.eq(got, { "gpipe4", "gpipe8", "1f1b4", "1f1b8" }, "order = { schedule, microbatches }")
end

-- 3. a list of points, in its order; the base form sets the point's fields
do
    local rs = ps.sweep{ name = "list", run = spec,
        points = { { microbatches = 8 }, { microbatches = 2, stages = 2 } } }
    H.eq(rs[1].makespan, 3 * (8 + 3), "first listed point")
    H.eq(rs[2].makespan, 6 * (2 + 1), "second listed point (2 layers a stage: f 2, b 4)")
    local rb = ps.sweep{ name = "base", base = { layers = layers, stages = 4, microbatches = 4 },
        space = { schedule = { "gpipe", "1f1b" } } }
    H.eq(rb[1].schedule, "gpipe", "values keep their list order (not sorted)")
    H.eq(rb[2].schedule, "1f1b", "the second listed value second")
    H.eq(rb[2].stages, 4, "base fields kept")
end

-- 4. a single coordinate and one value is a sweep of one point
do
    local rs = ps.sweep{ name = "one", run = spec, space = { microbatches = { 4 } } }
    H.eq(#rs, 1, "one point")
    H.eq(rs[1].makespan, 21, "3(4 + 3)")
end

-- 5. plain ps.run loops keep working, and record tags
do
    local r = ps.run{ layers = layers, stages = 2, microbatches = 2, tags = { gbs = 1024 } }
    H.eq(r.makespan, 6 * (2 + 1), "plain run")
    H.eq(r.point, nil, "no point outside a sweep")
end

H.done()
