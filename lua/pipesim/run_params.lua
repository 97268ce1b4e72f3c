-- pipesim.run_params: the inputs of a ps.run or ps.collective as the JSON
-- of run.params (init.lua). A sweep's memo entry keeps each field's text,
-- so that a later point encodes only the fields whose values changed.
local core = require "pipesim.core"
local J = require "pipesim.json"
local json, json_text, put, qkey = J.json, J.text, J.put, J.qkey
local json_plain = core.json_plain

-- The cluster's part of run.params, per cluster (a cluster's fields do
-- not change).
local CLUSTER_PARAMS = setmetatable({}, { __mode = "k" })

-- The inputs of a run as a table for run.params (layers summarised: a
-- sweep of thousands of runs should not store thousands of copies of the
-- model).
local function cluster_params(c)
    local cp = CLUSTER_PARAMS[c]
    if not cp then
        cp = { ranks = c.ranks, gpus_per_node = c.gpus_per_node,
               device = { memory = c.memory, flops_rate = c.flops_rate } }
        CLUSTER_PARAMS[c] = cp
    end
    return cp
end

local function params_table(spec, partition)
    local p = {}
    for k, v in pairs(spec) do
        if k ~= "layers" and k ~= "cluster" and k ~= "tags" then p[k] = v end
    end
    p.partition = partition
    p.layers = #spec.layers
    local c = spec.cluster
    if c then p.cluster = cluster_params(c) end
    return p
end

-- The number of params_table(spec, partition)'s keys without building
-- it (a table filled key by key costs a rehash every power of two, and
-- pairs a C call per key): spec's (core/bind/sweep.c) less layers,
-- cluster and tags, plus partition and layers, plus cluster when there is
-- one; nil for a spec with a metatable (pairs could see other keys).
local count_fields = core.count_fields
local function param_count(spec)
    local n = count_fields(spec)
    if not n then return nil end
    if spec.layers ~= nil then n = n - 1 end
    if spec.cluster ~= nil then n = n - 1 end
    if spec.tags ~= nil then n = n - 1 end
    if spec.partition == nil then n = n + 1 end
    n = n + 1 -- layers
    if spec.cluster then n = n + 1 end
    return n
end

-- How params_json's memo finds each key's value: from spec, or the three
-- params_table makes itself.
local PARAM_SPEC, PARAM_PARTITION, PARAM_LAYERS, PARAM_CLUSTER, PARAM_NONE = 0, 1, 2, 3, 4
local PARAM_KIND = { partition = PARAM_PARTITION, layers = PARAM_LAYERS,
                     cluster = PARAM_CLUSTER, tags = PARAM_NONE }

-- Whether a and b have the same JSON text for certain: the same table
-- (a sweep's memo lives only while no user code can change one), string or
-- boolean, or the same number of the same kind (1 and 1.0 print alike but
-- 2^60 does not; 0.0 and -0.0 are equal and print apart).
local mtype = math.type
local function same_value(a, b)
    if a ~= b then return false end
    local ta = mtype(a) -- nil for anything but a number
    if ta == nil then return true end
    return ta == mtype(b) and (a ~= 0 or 1 / a == 1 / b)
end

-- run.params as JSON. m: a sweep's memo entry (prepare_run), or nil. With
-- one, the first point's keys in order and each field's text are kept,
-- and a later point with the same keys encodes only the fields whose
-- values differ: the same text as json gives, without a sort or a walk
-- of the unchanged fields per point.
local PARAMS_OUT = {} -- params_json's pieces (filled from 1 each call)

local function params_json(spec, partition, m)
    local pj = m and m.params
    if not pj then
        local p = params_table(spec, partition)
        local text = json_text(p)
        if m and next(p) ~= nil then
            local keys = {}
            for k in pairs(p) do keys[#keys + 1] = k end
            table.sort(keys)
            -- each key's text and its field's, with the comma before it
            local vals, frag, kinds, qk, num = {}, {}, {}, {}, {}
            for i, k in ipairs(keys) do
                vals[i] = p[k]
                num[i] = type(p[k]) == "number"
                qk[i] = (i > 1 and "," or "") .. qkey(k)
                frag[i] = qk[i] .. json_text(p[k])
                kinds[i] = PARAM_KIND[k] or PARAM_SPEC
            end
            m.params = { keys = keys, vals = vals, frag = frag, kinds = kinds, qk = qk,
                         num = num, n = #keys }
        end
        return text
    end
    local keys, vals, frag, kinds, qk, num = pj.keys, pj.vals, pj.frag, pj.kinds, pj.qk, pj.num
    local loop = m.loop
    local n = param_count(spec)
    if n ~= pj.n then return json_text(params_table(spec, partition)) end
    -- the same keys as the first point's (as many, all present)
    local out, no = PARAMS_OUT, 1
    out[1] = "{"
    for i = 1, n do
        local kind, v = kinds[i], nil
        if kind == PARAM_SPEC then
            v = spec[keys[i]]
        elseif kind == PARAM_PARTITION then
            v = partition
        elseif kind == PARAM_LAYERS then
            v = #spec.layers
        elseif kind == PARAM_CLUSTER then
            local c = spec.cluster
            v = c and cluster_params(c) or nil
        end
        if v == nil then return json_text(params_table(spec, partition)) end
        -- a value equal to a kept non-number is the same table, string or
        -- boolean: the same text without same_value's C call
        local w = vals[i]
        -- a loop's memo (loop_memo) cannot know that a script's table is
        -- unchanged (the cluster's params are its own, kept per cluster)
        if v == w and (not num[i] or same_value(v, w))
            and not (loop and kind ~= PARAM_CLUSTER and type(v) == "table") then
            no = no + 1; out[no] = frag[i]
        else
            no = no + 1; out[no] = qk[i]
            local text = json_plain(v)
            if text then no = no + 1; out[no] = text else no = put(v, out, no, {}) end
        end
    end
    no = no + 1; out[no] = "}"
    return table.concat(out, "", 1, no)
end

-- The inputs of a collective as JSON for run.params: the cluster by its
-- shape and name (the `topology` key, which results/queries/crossover.sql
-- groups by), the data function as `true`.
local function collective_params(spec)
    local p = {}
    for k, v in pairs(spec) do
        if k ~= "cluster" and k ~= "data" and k ~= "tags" then p[k] = v end
    end
    if type(spec.bytes) == "string" then
        local ok, n = pcall(core.parse, spec.bytes, "bytes")
        if ok then p.bytes = n end
    end
    if spec.data ~= nil then p.data = true end
    p.algorithm = spec.algorithm or "auto"
    local c = spec.cluster
    if type(c) == "userdata" then
        p.topology = c.name
        p.cluster = { ranks = c.ranks, nodes = c.nodes,
                        gpus_per_node = c.gpus_per_node, topology = c.topology,
                        sharing = c.sharing, name = c.name }
    end
    return table.concat(json(p, {}))
end

return { params_json = params_json, collective_params = collective_params }
