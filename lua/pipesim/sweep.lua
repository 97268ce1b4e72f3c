-- ps.sweep: a sweep as one call. The points of a product space (or a
-- list), each turned into a ps.run (or ps.collective) table by `run`,
-- simulated in point order or by --jobs worker processes
-- (core/bind/sweep.c), recorded with run.sweep, run.point (JSON) and
-- run.point_index, and returned in point order. README "Sweeps".
local check = require "pipesim.argcheck"
local core = require "pipesim.core"

local M = {}

local FIELDS = { "base", "jobs", "name", "order", "points", "run", "space" }

local function fail(fmt, ...)
    error("ps.sweep: " .. string.format(fmt, ...), 0)
end

-- A list without holes (1..n, no other keys).
local function is_list(t)
    if type(t) ~= "table" then return false end
    local n = 0
    for _ in pairs(t) do n = n + 1 end
    return n == #t
end

-- The point order of a product space: coordinates nested in `order`
-- (default: their names sorted), the first outermost, so the last varies
-- fastest, each through its values in list order. With space = { b = {1,
-- 2}, a = {"x", "y"} } the points are {a="x",b=1}, {a="x",b=2},
-- {a="y",b=1}, {a="y",b=2}.
local function product(space, order)
    if type(space) ~= "table" then
        fail("field 'space' must be a table of coordinate names to lists of values, got %s",
            check.show(space))
    end
    local keys = {}
    for k, vals in pairs(space) do
        if type(k) ~= "string" then
            fail("field 'space' must map names to lists of values, got key %s", check.show(k))
        end
        if not is_list(vals) then
            fail("field 'space.%s' must be a list of values, got %s", k,
                type(vals) == "table" and "a table with other keys" or check.show(vals))
        end
        if #vals == 0 then
            fail("field 'space.%s' is an empty list (the sweep would have no points)", k)
        end
        keys[#keys + 1] = k
    end
    if #keys == 0 then
        fail("field 'space' is empty (give each coordinate a list of values, such as " ..
            "space = { microbatches = { 8, 16 } })")
    end
    if order ~= nil then
        if not is_list(order) then
            fail("field 'order' must be a list of the space's coordinate names, got %s",
                check.show(order))
        end
        local seen = {}
        for _, k in ipairs(order) do
            if space[k] == nil then
                fail("field 'order': '%s' is not a coordinate of the space%s", tostring(k),
                    check.hint(tostring(k), keys))
            end
            if seen[k] then fail("field 'order' names '%s' twice", k) end
            seen[k] = true
        end
        for _, k in ipairs(keys) do
            if not seen[k] then fail("field 'order' leaves out coordinate '%s'", k) end
        end
        keys = table.move(order, 1, #order, 1, {})
    else
        table.sort(keys)
    end
    local points = {}
    local idx = {}
    for i = 1, #keys do idx[i] = 1 end
    while true do
        local p = {}
        for i, k in ipairs(keys) do p[k] = space[k][idx[i]] end
        points[#points + 1] = p
        local i = #keys
        while i >= 1 do
            idx[i] = idx[i] + 1
            if idx[i] <= #space[keys[i]] then break end
            idx[i] = 1
            i = i - 1
        end
        if i == 0 then break end
    end
    return points, keys
end

-- A point's values for JSON: clusters and other userdata by name (their
-- addresses would differ between runs), functions refused.
-- i: the point's index, for the message.
local function plain(v, i)
    local t = type(v)
    if t == "table" then
        local out = {}
        for k, x in pairs(v) do out[k] = plain(x, i) end
        return out
    elseif t == "userdata" then
        local ok, name = pcall(function() return v.name end)
        return ok and name or "userdata"
    elseif t == "function" or t == "thread" then
        fail("points[%d]: values must be data (numbers, strings, booleans, tables, clusters), " ..
            "got a %s", i, t)
    end
    return v
end

local function copy(t)
    local c = {}
    for k, v in pairs(t) do c[k] = v end
    return c
end

-- The ps.sweep table, checked: name, points (all of them, in order), the
-- function from a point to a run table, the jobs cap.
local function parse(spec, json, shared)
    if type(spec) ~= "table" then fail("expected a table of fields, got %s", type(spec)) end
    check.known_fields(spec, FIELDS, "ps.sweep")
    local name = spec.name
    if type(name) ~= "string" or name == "" then
        fail("field 'name' must be a non-empty string (it is recorded in run.sweep), got %s",
            check.show(name))
    end
    if (spec.space == nil) == (spec.points == nil) then
        fail("give either field 'space' (a product of coordinate lists) or field 'points' " ..
            "(a list of points)")
    end
    local points
    if spec.space ~= nil then
        points = product(spec.space, spec.order)
    else
        if spec.order ~= nil then fail("field 'order' needs field 'space'") end
        if not is_list(spec.points) then
            fail("field 'points' must be a list of point tables, got %s", check.show(spec.points))
        end
        if #spec.points == 0 then fail("field 'points' is empty (the sweep would have no points)") end
        points = {}
        for i, p in ipairs(spec.points) do
            if type(p) ~= "table" then
                fail("field 'points[%d]' must be a table of coordinates, got %s", i, check.show(p))
            end
            points[i] = p
        end
    end
    local run = spec.run
    local plains -- per point: sets no shared field (base sweeps only)
    if run ~= nil and type(run) ~= "function" then
        fail("field 'run' must be a function(point) returning a ps.run table, got %s",
            check.show(run))
    end
    local base = spec.base
    if base ~= nil and type(base) ~= "table" then
        fail("field 'base' must be a ps.run table, got %s", check.show(base))
    end
    if run == nil and base == nil then
        fail("give field 'run' (a function(point) returning a ps.run table) or field 'base' " ..
            "(a ps.run table the point's fields are set in)")
    end
    if run ~= nil and base ~= nil then
        fail("give field 'run' or field 'base', not both (run can start from a copy of base)")
    end
    if base then
        -- the coordinates are fields of the run table: check their names now
        local known = base.op ~= nil and core.fields.collective or core.fields.run
        -- the names as a set: the binding's check (and its message) only
        -- for a point with a name outside it
        local set = {}
        for _, k in ipairs(known) do set[k] = true end
        plains = {}
        for i, p in ipairs(points) do
            local all, own = true, true
            for k in pairs(p) do
                if not set[k] then all = false; break end
                if shared[k] then own = false end
            end
            -- a point that sets none of what ps.run keeps per base sweep
            -- (lua/pipesim/init.lua prepare_run)
            plains[i] = all and own
            if not all then
                local ok, err = pcall(check.known_fields, p, known, "space")
                if not ok then fail("%s", err) end
            end
        end
        run = function(p)
            -- in one go, sized for ps.run's fields (core/bind/sweep.c)
            local t = core.copy_fields(base, p)
            if t then return t end
            t = copy(base)
            for k, v in pairs(p) do t[k] = v end
            return t
        end
    end
    local jobs = spec.jobs
    if jobs ~= nil then jobs = check.int(jobs, "ps.sweep", "jobs", 1, 1024) end
    local jsons = {}
    for i, p in ipairs(points) do
        -- plain data as it is (core/bind/sweep.c), else a copy with
        -- clusters by name
        jsons[i] = core.json_plain(p) or table.concat(json(plain(p, i), {}))
    end
    return name, points, jsons, run, jobs, plains
end

local running = false

function M.run(ps, spec, hooks)
    if running then
        error("ps.sweep: a sweep's run function cannot start another sweep", 2)
    end
    local ok, name, points, jsons, run, cap, plains = pcall(parse, spec, hooks.json,
        hooks.shared)
    if not ok then error(name, 2) end
    local shared = plains ~= nil
    -- with `base`, no user code runs between the points, so what they
    -- share (the layers, the cluster) is checked and lowered once: ps.run's
    -- memo for this sweep (lua/pipesim/init.lua prepare_run)
    local memo = shared and {} or nil
    -- its name and points identify it to pipesim merge (--shard)
    core.sweep_begin(name, jsons)
    local jobs, shard_k, shard_n = core.sweep_info()
    if cap and cap < jobs then jobs = cap end
    -- this process's points: every index i (from 0) with i % N == K
    local mine = {}
    for i = shard_k, #points - 1, shard_n do mine[#mine + 1] = i end

    local function where(i)
        return string.format("ps.sweep: '%s' point_index %d %s: ", name, i, jsons[i + 1])
    end
    -- the sweep's place, one table set anew for each point (ps.run copies
    -- what it records from it)
    local at = { sweep = name, memo = memo }
    -- evaluates the j-th of this process's points; raises a one-line
    -- message naming the point
    local function eval(j)
        local i = mine[j]
        local p = points[i + 1]
        local okr, t = pcall(run, p)
        if not okr then error(where(i) .. tostring(t), 0) end
        if type(t) ~= "table" or getmetatable(t) ~= nil then
            error(where(i) .. "run must return a ps.run (or ps.collective) table, got " ..
                (type(t) == "table" and "a table with a metatable" or check.show(t)), 0)
        end
        at.point, at.point_index, at.plain = jsons[i + 1], i, plains and plains[i + 1] or nil
        hooks.at(at)
        local f = t.op ~= nil and ps.collective or ps.run
        local okf, r = pcall(f, t)
        hooks.at(nil)
        if not okf then
            -- ps.run blames its caller, this file: the point says where instead
            local msg = tostring(r):gsub("^[^\n]-sweep%.lua:%d+: ", "")
            error(where(i) .. msg, 0)
        end
        r.point = p
        r.point_index = i
        return r
    end

    running = true
    -- the points' runs commit in batches (core/bind/sweep.c); ending the
    -- batches commits them, before any id is returned or an error raised
    core.sweep_batch(true)
    local function stop(err)
        running = false
        local okb, berr = pcall(core.sweep_batch, false)
        if err ~= nil then error(err, 3) end
        if not okb then error(berr, 3) end
    end
    local results
    if jobs > 1 and #mine > 1 then
        local okm, res = pcall(core.sweep_map, #mine, jobs, eval)
        stop(not okm and res or nil)
        results = res
        for j, r in ipairs(results) do
            r.point = points[mine[j] + 1]
        end
    else
        results = {}
        core.sweep_progress(0, #mine)
        for j = 1, #mine do
            local okr, r = pcall(eval, j)
            if not okr then
                core.sweep_progress(0, 0)
                stop(r)
            end
            results[j] = r
            core.sweep_progress(j, #mine)
        end
        core.sweep_progress(0, 0)
        stop(nil)
    end
    return results
end

return M
