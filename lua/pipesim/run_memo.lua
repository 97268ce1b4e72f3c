-- pipesim.run_memo: what ps.run keeps between runs of one layer list
-- (init.lua's prepare_run): a base sweep's memo entries, keyed by the
-- values of the fields the check and the lowering read, and a plain
-- loop's memo, which compares a snapshot of the layers on every call.
local core = require "pipesim.core"
local fields = require "pipesim.fields" -- the lists, from core/bind/fields.c
local mtype = math.type

-- The fields parallel.prepare reads besides the layers and the cluster:
-- a sweep's lowered plans are kept per combination of their values.
local PLAN_FIELDS = fields.with_role("run", "plan")
local NIL = {} -- stands for nil in the plan memo's keys
-- SHARED_FIELDS (below, after CHECK_FIELDS): a base sweep's point that
-- sets none of them is "plain" (prepare_run, run_meta)

-- The memo entry of a sweep's run table: one per (layers, cluster)
-- pair, holding the layers read once (sealed, core/bind/run.c) and the
-- lowered plans. A sweep given as `base` runs no user code between its
-- points (lua/pipesim/sweep.lua), so tables it shares cannot change
-- while the memo lives; it is dropped when the sweep ends.
local function memo_entry(memo, spec)
    local by_layers = memo[spec.layers]
    if not by_layers then by_layers = {}; memo[spec.layers] = by_layers end
    local c = spec.cluster == nil and NIL or spec.cluster
    local m = by_layers[c]
    if not m then m = { plans = {} }; by_layers[c] = m end
    return m
end

-- The plan memo's slot for spec's PLAN_FIELDS values (a trie on them), or
-- nil for a value that cannot be a key (NaN).
local function plan_slot(m, spec)
    local node = m.plans
    for i = 1, #PLAN_FIELDS do
        local v = spec[PLAN_FIELDS[i]]
        if v == nil then v = NIL elseif v ~= v then return nil end
        local nxt = node[v]
        if not nxt then nxt = {}; node[v] = nxt end
        node = nxt
    end
    return node
end

-- The fields core.check_run reads besides the names and the layers. In a
-- sweep's memo the names are known (the first point's run table passed
-- the check, and lua/pipesim/sweep.lua checks every point's names against
-- the same list) and the layers are the sealed ones, so a point whose
-- values of these equal those of a point that passed would pass too (the
-- binding takes 4 and 4.0 alike): it is not checked again.
local CHECK_FIELDS = fields.with_role("run", "check")

-- What prepare_run and run_meta read and keep for a plain point: the
-- check's and the plan's fields, the memo entry's keys, and the meta's.
local SHARED_FIELDS = { layers = true, cluster = true, tags = true, microbatches = true }
for _, k in ipairs(PLAN_FIELDS) do SHARED_FIELDS[k] = true end
for _, k in ipairs(CHECK_FIELDS) do SHARED_FIELDS[k] = true end
for k in pairs(fields.FIELDS) do SHARED_FIELDS[k] = true end

local function checked_before(m, spec)
    local last = m.checked
    if not last then return false end
    for i = 1, #CHECK_FIELDS do
        if spec[CHECK_FIELDS[i]] ~= last[i] then return false end
    end
    return true
end

local function remember_checked(m, spec)
    local last = m.checked or {}
    for i = 1, #CHECK_FIELDS do last[i] = spec[CHECK_FIELDS[i]] end
    m.checked = last
end


-- A loop's memo (issue 28): a plain Lua loop of ps.run, outside a base
-- sweep, gets the same memo as a base sweep's points (memo_entry: the
-- layers checked once, the lowered plans, the check, meta and efficiency
-- of the last values of SHARED_FIELDS) without the sweep's promise that no
-- user code runs between the calls. So each entry holds a snapshot of the
-- layer list's contents (core/bind/run_memo.c: every layer's keys and
-- values, and the tables inside them such as a model's shape), and a call
-- whose list differs from it, in any value of any layer, starts a new
-- entry: a layer changed between two calls gives the new result. The
-- other fields it keeps per entry (SHARED_FIELDS) are compared by value
-- on each call; a run table with a table among them (tags, ranks,
-- placement, a custom tp_comm) is not memoized at all, as a table's
-- contents could change without its identity, and neither is a list the
-- snapshot cannot see (a metatable) or a run table with a metatable.
-- Weak keys: a list or cluster collected takes its entries along.
local LOOP_MEMO = setmetatable({}, { __mode = "k" })
local LOOP_FIELDS = {} -- SHARED_FIELDS but the entry's keys, in a fixed order
for k in pairs(SHARED_FIELDS) do
    if k ~= "layers" and k ~= "cluster" then LOOP_FIELDS[#LOOP_FIELDS + 1] = k end
end
table.sort(LOOP_FIELDS)
local NLOOP_FIELDS = #LOOP_FIELDS
local LOOP_INDEX = {} -- a field's place in LOOP_FIELDS
for i, k in ipairs(LOOP_FIELDS) do LOOP_INDEX[k] = i end
local layers_unchanged, layers_snapshot = core.layers_unchanged, core.layers_snapshot

-- The loop memo's entry for spec, its `plain` set (the values of
-- LOOP_FIELDS are the entry's last ones), or nil: no memo for this call.
local function loop_memo(spec)
    local layers, c = spec.layers, spec.cluster
    if type(layers) ~= "table" or (c ~= nil and type(c) ~= "userdata") then return nil end
    -- a run table with a metatable could answer other values than its keys
    if getmetatable(spec) ~= nil then return nil end
    local by = LOOP_MEMO[layers]
    if not by then
        by = setmetatable({}, { __mode = "k" })
        LOOP_MEMO[layers] = by
    end
    local key = c == nil and NIL or c
    local m = by[key]
    if m == false then return nil end -- a list the snapshot cannot see
    if m and not layers_unchanged(layers, m.snap) then m = nil end
    if not m then
        local snap = layers_snapshot(layers)
        if not snap then by[key] = false; return nil end
        m = { plans = {}, snap = snap, loop = true, last = {} }
        by[key] = m
    end
    -- the run table's own keys, not every one of LOOP_FIELDS (a run table
    -- sets a few of them): the same values as the last call's, and as
    -- many (none of the last ones gone)
    local last, plain, n = m.last, m.plain ~= nil, 0
    for k, v in next, spec do
        local i = LOOP_INDEX[k]
        if i then
            if type(v) == "table" then return nil end
            n = n + 1
            if plain and (v ~= last[i] or mtype(v) ~= mtype(last[i])) then plain = false end
        end
    end
    if n ~= m.nlast then plain = false end
    if not plain then -- new values: what was kept for the last ones goes
        for i = 1, NLOOP_FIELDS do last[i] = spec[LOOP_FIELDS[i]] end
        m.nlast = n
        m.plain_checked, m.plain_slot, m.meta, m.efficiency = nil, nil, nil, nil
    end
    m.plain = true
    return m
end

return { memo_entry = memo_entry, plan_slot = plan_slot, checked_before = checked_before,
         remember_checked = remember_checked, loop_memo = loop_memo,
         SHARED_FIELDS = SHARED_FIELDS }
