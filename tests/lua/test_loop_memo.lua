-- A plain loop of ps.run keeps the checked and lowered layers per layer
-- list (lua/pipesim/init.lua loop_memo, core/bind/run_memo.c), keyed by
-- the list's contents: a layer changed between two calls, in place, gives
-- the result of the changed list (the same as a fresh copy of it), and a
-- misspelt field added later is still an error. ps.batch returns what its
-- function returns and raises its error.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local core = require "pipesim.core"

-- a deep copy: another list, which no memo entry has seen
local function copy(v, seen)
    if type(v) ~= "table" then return v end
    seen = seen or {}
    if seen[v] then return seen[v] end
    local t = {}
    seen[v] = t
    for k, x in pairs(v) do t[copy(k, seen)] = copy(x, seen) end
    return setmetatable(t, getmetatable(v))
end

local node = ps.clusters.dgx("A100", 1)
local cluster = ps.cluster{ ranks = 4, device = node.device, link = node.intra }

-- ps.run of spec, and of spec with a fresh copy of its layers: equal
local function fresh(spec, label)
    local got = ps.run(spec)
    local t = {}
    for k, v in pairs(spec) do t[k] = v end
    t.layers = copy(spec.layers)
    local want = ps.run(t)
    H.near(got.makespan, want.makespan, 1e-12, label)
    H.eq(got.peak_memory, want.peak_memory, label .. " peak memory")
    return got.makespan
end

-- plain layers: each change, in place, between two calls of one loop
local plain = {}
for i = 1, 6 do plain[i] = { fwd_time = 1e-3 * i, act_bytes = "1 MiB" } end
local spec = { layers = plain, stages = 3, microbatches = 4, record = "none" }
local t0 = fresh(spec, "plain")
H.near(fresh(spec, "plain again"), t0, 0, "the memo gives the first result")
plain[2].fwd_time = 0.5
local t1 = fresh(spec, "a layer's value changed")
H.check(t1 > t0 + 0.4, "the changed layer counts: " .. t1 .. " after " .. t0)
plain[2].fwd_time = 2e-3
H.near(fresh(spec, "changed back"), t0, 0, "changed back")
plain[3].bwd_time = 0.25 -- a field added
H.check(fresh(spec, "a field added") > t0 + 0.2, "the added field counts")
plain[3].bwd_time = nil -- and removed
H.near(fresh(spec, "a field removed"), t0, 0, "removed")
plain[4] = { fwd_time = 0.125 } -- a layer replaced
H.check(fresh(spec, "a layer replaced") > t0 + 0.1, "the new layer counts")
plain[7] = { fwd_time = 1e-3 } -- a layer appended
fresh(spec, "a layer appended")
plain[7] = nil
plain[4] = { fwd_time = 4e-3, act_bytes = "1 MiB" }
H.near(fresh(spec, "as first"), t0, 0, "as first")
plain[1].fwd_time = 1 -- integer and float: one value
fresh(spec, "an integer")
plain[1].fwd_time = 1.0
fresh(spec, "a float")
plain[1].fwd_time = 1e-3
-- a misspelt field added after the memo was made is an error, as it is
-- on the first call
plain[5].fwd_tiem = 1
H.raises(function() ps.run(spec) end, "unknown field 'fwd_tiem'", "misspelt field after the memo")
plain[5].fwd_tiem = nil
H.near(fresh(spec, "without it"), t0, 0, "without the misspelt field")

-- model layers: the shape table they share, changed in place, is lowered anew
local model = ps.models.preset("llama2-7b", { seq = 4096, microbatch = 1 })
local mspec = { cluster = cluster, layers = model, stages = 4, microbatches = 8, record = "none" }
local m0 = fresh(mspec, "model")
fresh(mspec, "model again")
model[5].shape.hidden = 8192
local m1 = fresh(mspec, "the shape's hidden size doubled")
H.check(m1 > 1.2 * m0, "a wider model is slower: " .. m1 .. " after " .. m0)
model[5].shape.hidden = 4096
H.near(fresh(mspec, "shape back"), m0, 0, "the shape changed back")
mspec.tp, mspec.stages = 2, 2
fresh(mspec, "tp 2")
mspec.tp, mspec.stages = nil, 4
H.near(fresh(mspec, "tp 1 again"), m0, 0, "tp 1 again")
-- a kept field removed and nothing else changed: not the last call's plan
mspec.recompute = "full"
H.check(fresh(mspec, "recompute full") > m0, "recompute costs time")
mspec.recompute = nil
H.near(fresh(mspec, "recompute removed"), m0, 0, "recompute removed")

-- a list with a metatable is not memoized, and still right
local meta = setmetatable(copy(plain), { __index = function() return nil end })
local mt = { layers = meta, stages = 3, microbatches = 4, record = "none" }
H.near(fresh(mt, "metatable"), t0, 0, "a list with a metatable")
meta[2].fwd_time = 0.5
H.near(fresh(mt, "metatable changed"), t1, 0, "a list with a metatable, changed")

-- the snapshot itself, compared by its tables' bytes (core/bind/
-- table_bytes.c) and by walking the entries (walk = true): every change
-- is seen both ways, and undoing it is unchanged again
for _, walk in ipairs{ false, true } do
    local how = walk and " (walked)" or " (bytes)"
    local function unchanged(l, s) return core.layers_unchanged(l, s, walk) end
    local l = { { fwd_time = 1, name = string.rep("x", 64) } }
    local s = core.layers_snapshot(l)
    H.check(unchanged(l, s), "unchanged" .. how)
    l[1].name = string.rep("x", 63) .. "x" -- another long string of the same bytes
    -- the walk compares its bytes; the storage holds another address, a
    -- change (the memo checks the layers again)
    H.eq(unchanged(l, s), walk, "a long string of the same bytes" .. how)
    l[1].name = string.rep("x", 63) .. "y"
    H.check(not unchanged(l, s), "a long string changed" .. how)
    l[1].name = string.rep("x", 64)
    l[1].fwd_time = 0 / 0
    H.check(not unchanged(l, s), "NaN differs" .. how)
    local shape = { hidden = 4096 }
    local m = { { fwd_time = 1, shape = shape }, { fwd_time = 2, shape = shape } }
    -- each change seen; its undoing unchanged again when walked, and by
    -- the bytes too where only values changed (a key removed leaves its
    -- node, a table grown keeps its larger part: changes, which only cost
    -- the memo a new check). exact = "values": the walk only (a key added
    -- may rehash the table, and a rehash may change lua_next's order,
    -- which the walk follows: Lua seeds its string hashes per process, so
    -- whether it does varies from run to run)
    local function change(label, exact, doit, undo)
        local ms = core.layers_snapshot(m)
        doit()
        H.check(not unchanged(m, ms), label .. how)
        undo()
        if (walk and exact ~= "values") or exact == true then
            H.check(unchanged(m, ms), label .. ", undone" .. how)
        end
    end
    change("a value", true, function() m[2].fwd_time = 3 end, function() m[2].fwd_time = 2 end)
    change("an integer for a float", true, function() m[1].fwd_time = 1.0 end,
        function() m[1].fwd_time = 1 end)
    change("a field added", "values", function() m[1].bwd_time = 1 end,
        function() m[1].bwd_time = nil end)
    change("a field removed", false, function() m[1].fwd_time = nil end,
        function() m[1].fwd_time = 1 end)
    change("the shared table", true, function() shape.hidden = 8192 end,
        function() shape.hidden = 4096 end)
    change("a layer appended", false, function() m[3] = { fwd_time = 1 } end,
        function() m[3] = nil end)
    local second = m[2]
    change("a layer replaced", true, function() m[2] = { fwd_time = 2, shape = shape } end,
        function() m[2] = second end)
    change("a metatable", true, function() setmetatable(m[1], {}) end,
        function() setmetatable(m[1], nil) end)
    local ms = core.layers_snapshot(m)
    -- many fields added and removed: the table's hash part is resized
    for i = 1, 100 do m[1]["f" .. i] = i end
    H.check(not unchanged(m, ms), "grown" .. how)
    for i = 1, 100 do m[1]["f" .. i] = nil end
    H.check(not unchanged(m, ms) or walk, "grown and emptied: a change unless walked" .. how)
    H.check(unchanged(m, core.layers_snapshot(m)), "a new snapshot" .. how)
    -- the same contents in another list: the walk compares contents, the
    -- bytes the list too (the memo is keyed by the list anyway)
    H.eq(unchanged({ m[1], m[2] }, core.layers_snapshot(m)), walk, "another list" .. how)
end
do
    H.check(core.layers_snapshot(setmetatable({}, {})) == false, "a metatable: no snapshot")
    local deep = {}
    local at = deep
    for _ = 1, 12 do at.next = {}; at = at.next end
    H.check(core.layers_snapshot({ deep }) == false, "too deep: no snapshot")
    local cyc = { { fwd_time = 1 } }
    cyc[1].self = cyc
    local cs = core.layers_snapshot(cyc)
    H.check(cs and core.layers_unchanged(cyc, cs), "a cycle is walked once")
end

-- ps.batch
do
    local a, b = ps.batch(function(x) return x + 1, "two" end, 41)
    H.eq({ a, b }, { 42, "two" }, "ps.batch returns what its function returns")
    local n = 0
    ps.batch(function()
        for _ = 1, 3 do
            ps.batch(function() n = n + ps.run{ layers = plain, stages = 3, microbatches = 4,
                record = "summary" }.stages end)
        end
    end)
    H.eq(n, 9, "nested batches run")
    H.raises(function() ps.batch(function() error("inside", 0) end) end, "inside",
        "an error inside ps.batch is raised")
    local ok, err = pcall(ps.batch, 42)
    H.check(not ok and err:find("ps.batch: expected a function (the runs to batch), got 42", 1, true),
        "not a function: " .. tostring(err))
    -- runs after a failed batch are committed one by one again
    local r = ps.run{ layers = plain, stages = 3, microbatches = 4, record = "summary" }
    local r2 = ps.run{ layers = plain, stages = 3, microbatches = 4, record = "summary" }
    H.eq({ math.type(r.id), r2.id }, { "integer", r.id + 1 }, "runs after the batches, one by one")
end

H.done()
