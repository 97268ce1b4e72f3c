-- pipesim: the module scenarios load with `local ps = require "pipesim"`.
-- It checks arguments, fills defaults and resolves partitions in Lua, then
-- hands a plain table to the C core (pipesim.core). Every error is raised
-- at the scenario's line: "scenarios/x.lua:12: ps.run: ...".
local core = require "pipesim.core"
local check = require "pipesim.argcheck"

local ps = {}
ps.version = core.version
ps.args = core.args()

-- ps.partition, ps.models, ps.clusters, ps.profile and ps.schedule load
-- on first use (issue 12: a process pays only for the modules its scenario
-- reads; ps.models alone is four files). Each is required with the
-- package.path this module was loaded with, so a scenario that changes
-- package.path later gets the file it got when they loaded here; the
-- field, once loaded, is a plain field (assignable, nil-able), and
-- pairs(ps) loads the rest first, so it lists what it listed before.
local LAZY = { partition = "pipesim.partition", models = "pipesim.models",
    clusters = "pipesim.clusters", profile = "pipesim.profile", schedule = "pipesim.schedule",
    sharding = "pipesim.sharding" }
local package_, LOAD_PATH = package, package.path
local function lazy_field(t, k)
    local name = LAZY[k]
    if name == nil then return nil end
    local path = package_.path
    package_.path = LOAD_PATH
    local ok, m = pcall(require, name)
    package_.path = path
    if not ok then error(m, 0) end
    LAZY[k] = nil
    rawset(t, k, m)
    return m
end
setmetatable(ps, { __index = lazy_field, __pairs = function(t)
    for k in pairs(LAZY) do lazy_field(t, k) end
    return next, t, nil
end })
local parallel = require "pipesim.parallel"
local efficiency = require "pipesim.efficiency"


local function expect_table(fn, spec)
    if type(spec) ~= "table" then
        error(fn .. ": expected a table of fields, got " .. type(spec), 3)
    end
end

-- Calls a core function; a failure becomes an error at the scenario line
-- (level 3: the caller of the ps.* function that called us).
local function call(fn, f, ...)
    local ok, res = pcall(f, ...)
    if not ok then error(fn .. ": " .. tostring(res), 3) end
    return res
end

-- A cluster whose __gc was called by hand raises on every use
-- (core/bind/cluster.c); say so at the scenario's line before the front
-- end reads it (level 3, as call).
local function ranks_of(c) return c.ranks end

local function check_live(fn, c)
    if type(c) == "userdata" and not pcall(ranks_of, c) then
        error(fn .. ": cluster was freed", 3)
    end
end

-- The roofline constants of each cluster's device (ps.clusters), kept in
-- Lua for the compute model (lua/pipesim/models/roofline.lua); the C core
-- reads only flops, efficiency and memory, so they are taken out of the
-- table it gets. Weak keys: a cluster collected takes its entry along.
local ROOFLINE = setmetatable({}, { __mode = "k" })
-- Each cluster's device peaks per precision (efficiency.device_peaks),
-- for the efficiency figures of ps.run (issue 27 item 16).
local PEAKS = setmetatable({}, { __mode = "k" })

local function roofline_device(spec)
    local d = spec.device
    -- per-rank overrides are plain devices: the roofline is the cluster's
    if type(spec.devices) == "table" then
        for r, o in pairs(spec.devices) do
            if type(o) == "table" then
                local bad -- the first in sorted order: the message is the same every run
                for k in pairs(o) do
                    if (ps.clusters.ROOFLINE_FIELDS[k] or ps.clusters.ROOFLINE_OPTIONAL[k])
                        and (not bad or k < bad) then bad = k end
                end
                if bad then
                    error(string.format("ps.cluster: devices[%s]: field '%s' is a roofline constant, " ..
                        "which only the cluster's device takes (per-rank overrides take flops, " ..
                        "efficiency and memory)", tostring(r), bad), 3)
                end
            end
        end
    end
    if type(d) ~= "table" then return spec, nil end
    -- the device's fields are the binding's (core.fields.device) and the
    -- roofline constants: checked together here, so a misspelt constant
    -- gets its suggestion before the binding sees the rest
    local known = {}
    for _, k in ipairs(core.fields.device) do known[k] = true end
    for k in pairs(ps.clusters.ROOFLINE_FIELDS) do known[k] = true end
    for k in pairs(ps.clusters.ROOFLINE_OPTIONAL) do known[k] = true end
    local ok, err = pcall(check.known_fields, d, known, "device")
    if not ok then error("ps.cluster: " .. err, 3) end
    local roof, rest = {}, {}
    for k, v in pairs(d) do
        if ps.clusters.ROOFLINE_FIELDS[k] or ps.clusters.ROOFLINE_OPTIONAL[k] then
            roof[k] = v
        else
            rest[k] = v
        end
    end
    if next(roof) == nil then return spec, nil end
    -- optional constants (ps.clusters): checked when given
    for k in pairs(ps.clusters.ROOFLINE_OPTIONAL) do
        local v = roof[k]
        if v ~= nil and (type(v) ~= "number" or not (v > 0) or v ~= v or v == math.huge) then
            error(string.format("ps.cluster: field 'device.%s' must be a positive number, got %s",
                k, check.show(v)), 3)
        end
    end
    for k in pairs(ps.clusters.ROOFLINE_FIELDS) do
        local v = roof[k]
        if type(v) ~= "number" or not (v > 0) or v ~= v or v == math.huge then
            error(string.format("ps.cluster: field 'device.%s' must be a positive number, got %s",
                k, check.show(v)), 3)
        end
    end
    for _, k in ipairs(ps.clusters.ROOFLINE_FRACTIONS) do
        if roof[k] and roof[k] > 1 then
            error(string.format("ps.cluster: field 'device.%s' must be in (0, 1], got %s",
                k, check.show(roof[k])), 3)
        end
    end
    local flops = d.flops
    if type(flops) == "string" then
        local parsed, n = pcall(core.parse, flops, "flop_rate")
        if not parsed then error("ps.cluster: field 'device.flops': " .. n, 3) end
        flops = n
    end
    if type(flops) ~= "number" then
        error("ps.cluster: device: the roofline constants need field 'flops'", 3)
    end
    roof.flops = flops
    roof.name = d.name -- for messages naming the device (FP8 on an A100)
    local copy = {}
    for k, v in pairs(spec) do copy[k] = v end
    copy.device = rest
    return copy, roof
end

function ps.cluster(spec)
    expect_table("ps.cluster", spec)
    local cspec, roof = roofline_device(spec)
    local c = call("ps.cluster", core.cluster, cspec)
    if roof then ROOFLINE[c] = roof end
    PEAKS[c] = efficiency.device_peaks(spec) -- MFU's denominator (item 16)
    return c -- not a tail call: `call` blames the caller two frames up
end

-- The time of one TP collective on the listed cluster ranks, event-
-- simulated once per (cluster, op, bytes, ranks, algorithm, protocol) and
-- cached. How it runs: tp_comm's algorithm and protocol when the scenario
-- gives them, else the rule every collective of a step follows
-- (core.collective_rule, core/par/pass.h par_protocol): NCCL's own choice
-- (algorithm and protocol auto) on a cluster whose devices carry NCCL's
-- constants, pipesim's ring without a protocol on textbook links. Run
-- alone, as it is where no other traffic shares the TP group's links
-- (inside a node with the pipeline and data-parallel traffic on the NICs);
-- parallel.lua puts it on the compute stream.
local TP_COST = setmetatable({}, { __mode = "k" })

-- Lowered model layers per cluster (parallel.prepare's memo).
local LOWERED = setmetatable({}, { __mode = "k" })

local function tp_cost(cluster)
    local cache = TP_COST[cluster]
    if not cache then
        cache = { rule = core.collective_rule(cluster) }
        TP_COST[cluster] = cache
    end
    return function(op, bytes, ranks, o)
        bytes = math.ceil(bytes / 4) * 4
        local proto = o.tp_protocol or cache.rule
        local algo = o.tp_algorithm or (proto == "none" and "ring" or "auto")
        local key = op .. " " .. bytes .. " " .. table.concat(ranks, ",") .. " " .. algo ..
            " " .. proto
        local t = cache[key]
        if t == nil then
            local ok, r = pcall(core.collective, { cluster = cluster, op = op, algorithm = algo,
                bytes = bytes, ranks = ranks, record = "none", protocol = proto })
            if not ok then error("field 'tp_comm': " .. r, 0) end
            t = r.time
            cache[key] = t
        end
        return t
    end
end

-- Layer fields that carry units, and their kinds for core.parse.
local LAYER_UNITS = {
    fwd_flops = "flop", bwd_flops = "flop", fwd_time = "time",
    bwd_time = "time", act_bytes = "bytes", out_bytes = "bytes",
    in_bytes = "bytes", params = "flop",
    bwd_input_flops = "flop", bwd_weight_flops = "flop",
    bwd_input_time = "time", bwd_weight_time = "time",
    bwd_weight_bytes = "bytes", recompute_time = "time", work_bytes = "bytes",
}

-- Layers with unit strings turned into numbers (a new table only when a
-- layer has strings, so models built from numbers pass through as is).
-- core.check_run has checked every layer and its unit strings (the one
-- owner of those rules), so nothing here fails.
local function normalize_layers(layers)
    local out
    for i, l in ipairs(layers) do
        local copy
        for k, kind in pairs(LAYER_UNITS) do
            local v = l[k]
            if type(v) == "string" then
                local n = core.parse(v, kind)
                if not copy then
                    copy = {}
                    for kk, vv in pairs(l) do copy[kk] = vv end
                end
                copy[k] = n
            end
        end
        if copy then
            if not out then out = table.move(layers, 1, #layers, 1, {}) end
            out[i] = copy
        end
    end
    return out or layers
end

-- FLOP/s of each pipeline rank's device for partition = "time" ([r + 1]
-- for rank r; nil entries unknown): the cluster rank its program runs on
-- (the layout's, parallel.stage_ranks: TP rank 0 of its group), the
-- slowest replica's device when dp > 1 (a stage's replicas all wait for
-- the slowest at the gradient sync). Without a cluster every rate is
-- unknown (measured times only). core.check_run has checked stages, dp
-- and tp.
local function stage_rates(spec)
    local c = spec.cluster
    if type(c) ~= "userdata" then return nil end
    local all = c.flops_rates
    local p, dp = spec.stages, spec.dp or 1
    local ok, at = pcall(parallel.stage_ranks, spec)
    if not ok then return nil end -- a bad list or placement: core.run says so
    local rates = {}
    for r = 0, p - 1 do
        local slowest
        for j = 0, dp - 1 do
            local x = all[at[j * p + r + 1] + 1]
            if x == nil or x ~= x then slowest = nil; break end
            if not slowest or x < slowest then slowest = x end
        end
        rates[r + 1] = slowest or (0 / 0)
    end
    return rates
end

-- memo: a sweep's (prepare_run), whose layers are checked tables: an
-- explicit list is resolved without the public wrapper's checks.
local function resolve_partition(spec, layers, nstages, memo)
    local part = spec.partition
    if memo and type(part) == "table" then
        return ps.partition.resolve_checked(part, layers, nstages)
    end
    local opts = {}
    if spec.partition == "time" then
        opts.rates = stage_rates(spec)
        -- recompute = "full" (lua/pipesim/parallel.lua) picks the recomputed
        -- blocks after the split; "time" counts every layer's forward again
        opts.checkpoint = spec.checkpoint == true or spec.recompute == "full"
    end
    local ok, counts = pcall(ps.partition.resolve, spec.partition, layers, nstages, opts)
    if not ok then error(counts, 0) end
    return counts
end

-- JSON text of v appended to out. seen holds the tables being written: a
-- table inside itself is an error, not a stack overflow. Kept in Lua
-- rather than SQLite's JSON functions (issue 11): the input is a Lua
-- table, which must be walked here either way, and only the recorder may
-- call SQLite (core/README.md), so using them would mean a second copy
-- of this walk in C. Every run's params go through it, so it keeps its
-- own count of out's entries and remembers each key's quoted form.
local QKEY, nqkey = {}, 0 -- key -> its quoted text and ":", at most 4096

local function escape(c)
    return string.format("\\u%04x", c:byte())
end

-- s as a JSON string: " \ and control characters escaped, each byte that
-- is not well-formed UTF-8 (utf8.len's check: no overlong forms, no
-- surrogates) as \ufffd, as core/base/json.c writes in C, so that
-- run.params and run.tags are valid JSON for any name or tag.
local function quote(s)
    if not s:find('[%c"\\\128-\255]') then return '"' .. s .. '"' end
    local parts, np, i = {}, 0, 1
    while true do
        local ok, bad = utf8.len(s, i)
        np = np + 1
        parts[np] = (ok and s:sub(i) or s:sub(i, bad - 1)):gsub('[%c"\\]', escape)
        if ok then break end
        np = np + 1; parts[np] = "\\ufffd"
        i = bad + 1
    end
    return '"' .. table.concat(parts) .. '"'
end

local function qkey(k)
    local q = QKEY[k]
    if q then return q end
    q = quote(k) .. ":"
    if nqkey < 4096 then QKEY[k], nqkey = q, nqkey + 1 end
    return q
end

-- Number texts: tostring and "%.17g" go through snprintf, and a sweep's
-- params repeat the same few numbers, so each text is kept (at most 4096
-- of each kind). Integers and floats apart: a float key with an integer
-- value is stored as that integer (2.0 and 2), and 2^60 prints otherwise
-- as a float; 0.0 and -0.0 are one key, so zero floats are not kept.
local ITEXT, FTEXT, ntext = {}, {}, 0

local function number_text(v)
    local int = math.type(v) == "integer"
    local s = (int and ITEXT or FTEXT)[v]
    if s then return s end
    if int then s = tostring(v) else s = string.format("%.17g", v) end
    if ntext < 8192 and (int or v ~= 0) then
        (int and ITEXT or FTEXT)[v], ntext = s, ntext + 1
    end
    return s
end

-- put(v, out, n, seen) -> n: v's text in out[n + 1 ...].
local function put(v, out, n, seen)
    local t = type(v)
    if t == "table" then
        if seen[v] then error("a table contains itself (cyclic tables cannot be recorded)", 0) end
        seen[v] = true
        local len = #v
        if len > 0 or next(v) == nil then
            n = n + 1; out[n] = "["
            for i = 1, len do
                if i > 1 then n = n + 1; out[n] = "," end
                n = put(v[i], out, n, seen)
            end
            n = n + 1; out[n] = "]"
        else
            local keys, nk = {}, 0
            for k in pairs(v) do
                nk = nk + 1
                keys[nk] = type(k) == "string" and k or tostring(k)
            end
            table.sort(keys)
            n = n + 1; out[n] = "{"
            for i = 1, nk do
                local k = keys[i]
                if i > 1 then n = n + 1; out[n] = "," end
                n = n + 1; out[n] = qkey(k)
                -- a number key is found again from its text
                local x = v[k]
                if x == nil then x = v[tonumber(k)] or nil end
                n = put(x, out, n, seen)
            end
            n = n + 1; out[n] = "}"
        end
        seen[v] = nil
    elseif t == "number" then
        n = n + 1
        if v ~= v or v == math.huge or v == -math.huge then
            out[n] = "null"
        else
            out[n] = number_text(v)
        end
    elseif t == "string" then
        n = n + 1; out[n] = quote(v)
    elseif t == "boolean" then
        n = n + 1; out[n] = tostring(v)
    else
        n = n + 1; out[n] = quote(tostring(v))
    end
    return n
end

local function json(v, out, seen)
    put(v, out, #out, seen or {})
    return out
end

-- json's text of v: for plain data (no metatables, userdata or strings to
-- escape) from the binding's copy of put (core/bind/sweep.c), about 10x
-- faster; put's own when the binding leaves it (nil).
local json_plain = core.json_plain
local function json_text(v)
    return json_plain(v) or table.concat(json(v, {}))
end

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

-- The sweep's place of a run in progress (lua/pipesim/sweep.lua sets it
-- around each point): { sweep = name, point = JSON, point_index = i,
-- memo = prepare_run's memo for a `base` sweep, or nil }.
local SWEEP_AT = nil
-- Under --shard K/N with K > 0, runs outside a sweep are simulated but not
-- recorded: shard 0 records them, so that merging the shards gives each
-- run once.
local _, SHARD_K = core.sweep_info()

-- tags = { model = "llama3-70b", gbs = 1024 }: names to strings, numbers
-- or booleans, recorded as JSON in run.tags.
local function tags_json(fn, tags)
    if tags == nil then return nil end
    if type(tags) ~= "table" then
        error(string.format("%s: field 'tags' must be a table of names to strings, numbers " ..
            "or booleans, got %s", fn, check.show(tags)), 4)
    end
    for k, v in pairs(tags) do
        local t = type(v)
        if type(k) ~= "string" or not (t == "string" or t == "number" or t == "boolean") then
            error(string.format("%s: field 'tags.%s' must be a string, number or boolean, got %s",
                fn, tostring(k), t == "table" and "a table" or check.show(v)), 4)
        end
    end
    return table.concat(json(tags, {}))
end

-- meta for the core (core/bind/sweep.c): the sweep's place, the tags and,
-- for layers from ps.models, the model's name and batch shape
-- (global batch = micro-batch size x microbatches x dp, as Megatron-LM's
-- --global-batch-size = --micro-batch-size x num_microbatches x dp).
local function run_meta(fn, spec, pm)
    -- a plain point of a base sweep (prepare_run): the tags, the layers,
    -- microbatches and dp are the base's, so only the sweep's place
    -- changes; the core reads the table during the run and keeps nothing
    local m = pm and pm.meta
    if m then
        local at = SWEEP_AT -- nil in a loop's memo (loop_memo)
        if at then
            m.sweep, m.point, m.point_index = at.sweep, at.point, at.point_index
        else
            m.sweep, m.point, m.point_index = nil, nil, nil
        end
        return m
    end
    -- every key named: the constructor sizes the table once
    m = { sweep = nil, point = nil, point_index = nil, tags = nil, model = nil,
                seq_length = nil, micro_batch = nil, global_batch = nil }
    if SWEEP_AT then
        m.sweep, m.point, m.point_index = SWEEP_AT.sweep, SWEEP_AT.point, SWEEP_AT.point_index
    end
    m.tags = tags_json(fn, spec.tags)
    local l1 = type(spec.layers) == "table" and spec.layers[1]
    local shape = type(l1) == "table" and type(l1.shape) == "table" and l1.shape
    if shape then
        m.model = type(shape.name) == "string" and shape.name or nil
        m.seq_length = math.tointeger(shape.seq)
        m.micro_batch = math.tointeger(shape.microbatch)
        local mb, dp = math.tointeger(spec.microbatches), math.tointeger(spec.dp or 1)
        if m.micro_batch and mb and dp then m.global_batch = m.micro_batch * mb * dp end
    end
    if pm then pm.meta = m end
    return m
end

-- The sweep module's hooks into ps.run and ps.collective.
local function set_sweep_at(at) SWEEP_AT = at end

-- The fields parallel.prepare reads besides the layers and the cluster:
-- a sweep's lowered plans are kept per combination of their values.
local PLAN_FIELDS = { "tp", "sequence_parallel", "tp_overlap", "recompute", "checkpoint",
                      "recompute_method", "recompute_layers", "recompute_modules", "stages", "dp", "ranks",
                      "placement", "tp_comm", "cp", "cp_comm_type", "cp_hierarchy", "ep", "etp",
                      "moe_imbalance", "moe_dispatcher" }
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
local CHECK_FIELDS = { "stages", "microbatches", "virtual_stages", "dp", "tp", "cp",
                       "checkpoint" }

-- What prepare_run and run_meta read and keep for a plain point: the
-- check's and the plan's fields, the memo entry's keys, and the meta's.
local SHARED_FIELDS = { layers = true, cluster = true, tags = true, microbatches = true }
for _, k in ipairs(PLAN_FIELDS) do SHARED_FIELDS[k] = true end
for _, k in ipairs(CHECK_FIELDS) do SHARED_FIELDS[k] = true end
for k in pairs(parallel.FIELDS) do SHARED_FIELDS[k] = true end

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

-- Everything ps.run does before the core: field checks, model lowering
-- (TP, recompute), the partition. Returns the core's table, the TP plan
-- (or nil) and the partition; raises messages without a position, which
-- ps.run puts at the scenario's line. ps.search (lua/pipesim/search.lua)
-- calls it too, to cost a configuration without simulating it. memo (a
-- sweep's, or nil): layers checked and lowered once per sweep rather than
-- per point, with the same results.
local function prepare_run(spec, memo, loop)
    local m, plain
    if loop then -- a loop's memo entry (loop_memo, below)
        m, plain = loop, loop.plain
    else
        m = memo and type(spec.layers) == "table" and memo_entry(memo, spec) or nil
        -- a point of a base sweep that sets none of SHARED_FIELDS (sweep.lua
        -- says so in SWEEP_AT.plain) has the base's values of every field the
        -- check and the plan read: the slot and the check of the first such
        -- point hold for all of them
        plain = m and SWEEP_AT and SWEEP_AT.plain
    end
    local checked, err
    if plain and m.plain_checked then
        checked = true
    elseif m and m.sealed then
        if not checked_before(m, spec) then
            checked, err = pcall(core.check_run, spec, m.sealed)
            if checked then remember_checked(m, spec) end
        else
            checked = true
        end
    else
        checked, err = pcall(core.check_run, spec, m ~= nil)
        if checked and m then m.sealed = err; remember_checked(m, spec) end
    end
    if not checked then error("ps.run: " .. err, 0) end
    if plain then m.plain_checked = true end
    local stages, v = math.tointeger(spec.stages), math.tointeger(spec.virtual_stages or 1)
    -- The C core reads unit strings itself; only the weighted partitions
    -- add up layer figures in Lua, so only they need numbers (this keeps a
    -- sweep's per-run cost off the layer tables).
    -- Model layers, tensor parallelism and recompute modes are lowered in
    -- Lua first (lua/pipesim/parallel.lua): per-TP-rank layer times from the
    -- roofline, one core rank per TP group.
    local plan, pspec, dev, slot
    local ok
    local layers = spec.layers
    local applies
    if m then -- parallel.applies, its scan of the layers done once
        if m.shaped == nil then m.shaped = parallel.applies { layers = spec.layers } end
        applies = m.shaped
        if not applies then
            for k in pairs(parallel.TRIGGERS) do applies = applies or spec[k] ~= nil end
        end
    else
        applies = parallel.applies(spec)
    end
    if applies then
        local c = spec.cluster
        dev = type(c) == "userdata" and ROOFLINE[c] or nil
        if plain then
            slot = m.plain_slot
            if not slot then slot = plan_slot(m, spec); m.plain_slot = slot end
        else
            slot = m and plan_slot(m, spec)
        end
        plan = slot and slot.plan
        if not plan then
            local lmemo
            if type(c) == "userdata" then
                lmemo = LOWERED[c]
                if not lmemo then lmemo = {}; LOWERED[c] = lmemo end
            end
            ok, plan = pcall(parallel.prepare, spec, dev,
                type(c) == "userdata" and tp_cost(c) or nil, lmemo)
            if not ok then error("ps.run: " .. plan, 0) end
            if slot then slot.plan, slot.finish = plan, {} end
        end
        layers = plan.layers
        -- the plan's ranks for partition = "time" (stage_rates), the only
        -- partition that reads more of the table than its partition field
        if spec.partition == "time" then
            pspec = {}
            for k, val in pairs(spec) do pspec[k] = val end
            pspec.layers = layers
        end
    end
    local p = spec.partition
    if p == "params" or p == "flops" or p == "time" then
        layers = normalize_layers(layers)
    end
    local partition
    ok, partition = pcall(resolve_partition, pspec or spec, layers, stages * v, m)
    if not ok then error("ps.run: " .. partition, 0) end
    -- sized for the fields set below and by parallel.finish
    local args = core.copy_fields(spec, nil, 12)
    if not args then
        args = {}
        for k, val in pairs(spec) do args[k] = val end
    end
    args.layers = layers
    args.partition = partition
    if plan then
        plan.layers = layers
        -- finish returns nothing: keep `partition` for run.params
        local done, msg = pcall(parallel.finish, plan, partition, args, dev, spec,
            slot and slot.finish)
        if not done then error("ps.run: " .. msg, 0) end
    elseif m and layers == spec.layers then
        args.layers = m.sealed -- the core reads the copy checked above
    end
    return args, plan, partition, m, plain
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
-- snapshot cannot see (a metatable). Weak keys: a list or cluster
-- collected takes its entries along.
local LOOP_MEMO = setmetatable({}, { __mode = "k" })
local LOOP_FIELDS = {} -- SHARED_FIELDS but the entry's keys, in a fixed order
for k in pairs(SHARED_FIELDS) do
    if k ~= "layers" and k ~= "cluster" then LOOP_FIELDS[#LOOP_FIELDS + 1] = k end
end
table.sort(LOOP_FIELDS)
local NLOOP_FIELDS = #LOOP_FIELDS
local layers_unchanged, layers_snapshot = core.layers_unchanged, core.layers_snapshot

-- The loop memo's entry for spec, its `plain` set (the values of
-- LOOP_FIELDS are the entry's last ones), or nil: no memo for this call.
local function loop_memo(spec)
    local layers, c = spec.layers, spec.cluster
    if type(layers) ~= "table" or (c ~= nil and type(c) ~= "userdata") then return nil end
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
    local last, plain = m.last, m.plain ~= nil
    for i = 1, NLOOP_FIELDS do
        local v = spec[LOOP_FIELDS[i]]
        if type(v) == "table" then return nil end
        if plain and (v ~= last[i] or mtype(v) ~= mtype(last[i])) then plain = false end
    end
    if not plain then -- new values: what was kept for the last ones goes
        for i = 1, NLOOP_FIELDS do last[i] = spec[LOOP_FIELDS[i]] end
        m.plain_checked, m.plain_slot, m.meta, m.efficiency = nil, nil, nil, nil
    end
    m.plain = true
    return m
end

-- partition = "search": a local search over stage boundaries (ps.partition
-- .search), seeded from the "time" split (balanced seconds on each
-- stage's device; "uniform" when the layers have no time or FLOPs), each
-- candidate split simulated without recording. Returns a copy of spec with
-- the split found, and what the search did (r.partition_search).
local function search_partition(spec)
    local function with(part)
        local t = {}
        for k, val in pairs(spec) do t[k] = val end
        t.partition = part
        return t
    end
    local ok, args = pcall(prepare_run, with("time"))
    if not ok then args = prepare_run(with("uniform")) end
    local seed = args.partition
    -- per-layer weights for the tie-break: seconds (or FLOPs) of F + B + R
    local w = {}
    for i, l in ipairs(args.layers) do
        local f = tonumber(l.fwd_time) or tonumber(l.fwd_flops) or 0
        local b = tonumber(l.bwd_time) or tonumber(l.bwd_flops) or 2 * f
        w[i] = f + b + (args.checkpoint and (tonumber(l.recompute_time) or f) or 0)
    end
    local seed_time
    local function evaluate(counts)
        local t = with(counts)
        t.record = "none"
        local good, a = pcall(prepare_run, t)
        if not good then return math.huge end
        a.name = "partition search"
        a.params_json = function() return "{}" end
        local ran, r = pcall(core.run, a)
        local x = ran and r.makespan == r.makespan and r.makespan or math.huge
        seed_time = seed_time or x
        return x
    end
    local best, step, evals = ps.partition.search(seed, evaluate, w)
    if step == math.huge then
        error("ps.run: partition 'search': no split of the layers runs (the seed " ..
            table.concat(seed, ",") .. " fails too)", 0)
    end
    return with(best), { simulations = evals, seed = seed, seed_step_time = seed_time,
                           partition = best, step_time = step }
end

function ps.run(spec)
    expect_table("ps.run", spec)
    if spec.meta ~= nil then error("ps.run: unknown field 'meta'", 2) end
    -- a base sweep's cluster, live at its first point, stays so: no
    -- script code runs between the points
    local memo = SWEEP_AT and SWEEP_AT.memo
    if not (memo and memo.live ~= nil and rawequal(memo.live, spec.cluster)) then
        check_live("ps.run", spec.cluster)
        if memo and spec.cluster ~= nil then memo.live = spec.cluster end
    end
    local searched
    if spec.partition == "search" then
        local checked, err = pcall(core.check_run, spec)
        if not checked then error("ps.run: " .. err, 2) end
        local ok, found, info = pcall(search_partition, spec)
        if not ok then error(found, 2) end
        spec, searched = found, info
    end
    -- the binding checks the fields read below (names at the top, counts,
    -- every layer) before anything is computed from them; core.run checks
    -- the rest
    local loop = not memo and not searched and loop_memo(spec) or nil
    local ok, args, plan, partition, m, plain = pcall(prepare_run, spec, memo, loop)
    if not ok then error(args, 2) end
    if args.name == nil then
        args.name = type(spec.schedule) == "table" and "custom"
            or tostring(spec.schedule or "1f1b")
    end
    -- called by core.run once every field is checked (a table inside
    -- itself is an unknown field or a bad value before it reaches json)
    args.params_json = function() return params_json(spec, partition, m) end
    args.meta = run_meta("ps.run", spec, plain and m or nil)
    -- the step's efficiency figures, recorded with the run (issue 27 item
    -- 16); a plain sweep point has its base's figures, unless the
    -- partition decides which blocks recompute
    plain = plain and spec.recompute_method ~= "block"
    local eff = plain and m.efficiency
    if not eff then
        eff = efficiency.figures(spec, partition, PEAKS[spec.cluster])
        if plain then m.efficiency = eff end
    end
    args.meta.efficiency = eff
    if SHARD_K > 0 and not SWEEP_AT then args.record = "none" end
    -- the core views of model layers, read once (parallel.finish)
    if plan and plan.sealed_layers then args.layers = plan.sealed_layers end
    local r = call("ps.run", core.run, args)
    r.db = spec.db
    if SHARD_K > 0 and not SWEEP_AT then r.shard_left = true end
    if plan then parallel.annotate(r, plan) end
    r.efficiency = efficiency.rates(args.meta.efficiency, r.makespan)
    -- partition = "search": the simulations it used, its seed and result
    if searched then r.partition_search = searched end
    return r
end

-- ps.search{...}: plan search over TP x CP x PP x DP x v x micro-batch x
-- schedule x recompute x ZeRO x FP8 (lua/pipesim/search.lua). It costs
-- configurations with prepare_run before simulating the promising ones.
function ps.search(spec)
    -- not a tail call: errors are raised two frames up, at the scenario
    local res = require("pipesim.search").run(ps, spec, { prepare = prepare_run, level = 2,
        at = set_sweep_at, json = json, device = function(c) return ROOFLINE[c] end })
    return res
end

-- ps.layout{ tp =, cp =, ep =, etp =, dp =, pp =, vp =, placement =,
-- ranks =, cluster = | world = }: the parallel layout of a run, as the C
-- core places it (core/par/layout.h, Megatron-LM's RankGenerator): world,
-- sizes, order, coords[rank + 1], rank_of (each stage's program's rank),
-- span (with a cluster: how the groups spread over nodes and NICs) and
-- groups.<token> (Megatron's get_ranks names: tp, dp, pp, cp, ep, etp,
-- edp, "dp-cp", "tp-pp", embedding, ...). dp defaults to the world's
-- remainder; given, tp x cp x dp x pp must equal the world.
function ps.layout(spec)
    expect_table("ps.layout", spec)
    check_live("ps.layout", spec.cluster)
    local ok, view = pcall(parallel.layout, spec)
    if not ok then error("ps.layout: " .. tostring(view), 2) end
    return view
end

-- ps.collective: one collective on a cluster (core/bind/collective.c).

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

function ps.collective(spec)
    expect_table("ps.collective", spec)
    if spec.meta ~= nil then error("ps.collective: unknown field 'meta'", 2) end
    check_live("ps.collective", spec.cluster)
    local args = {}
    for k, v in pairs(spec) do args[k] = v end
    args.meta = run_meta("ps.collective", spec)
    if SHARD_K > 0 and not SWEEP_AT then args.record = "none" end
    -- called by core.collective once every field is checked
    args.params_json = function() return collective_params(spec) end
    local r = call("ps.collective", core.collective, args)
    r.db = spec.db
    if SHARD_K > 0 and not SWEEP_AT then r.shard_left = true end
    return r
end

-- ps.calibrate{}: live mode's transport and model, measured
-- (lua/pipesim/live.lua)
function ps.calibrate(spec)
    return require("pipesim.live").calibrate(core, spec)
end

-- Prints a run's summary line and ASCII Gantt chart (or, without a run, the
-- table of every run recorded so far in the session's database).
function ps.show(r, width)
    if r ~= nil and type(r) ~= "table" then
        error("ps.show: expected a run result, got " .. type(r), 2)
    end
    -- under --shard K/N (K > 0) a run outside a sweep is shard 0's to
    -- record and so to show: nothing to print here, and no error, so that
    -- one script runs as every shard
    if r and r.shard_left then return end
    if r and not r.id then
        error("ps.show: this run was not recorded (record = \"none\")", 2)
    end
    local ok, text, warnings = pcall(core.report, r and r.db, r and r.id, width)
    if not ok then error("ps.show: " .. tostring(text), 2) end
    io.write(text)
    if warnings ~= "" then
        -- "pipesim: warning: run 3: rank 2 needs 402.1 GiB, device has 80 GiB"
        io.stdout:flush()
        io.stderr:write(warnings)
    end
end

-- Percent formatting used by scenarios' tables.
function ps.pct(x)
    if x == nil then return "-" end
    return string.format("%.2f%%", 100 * x)
end

-- Bytes as GiB/MiB/KiB text.
function ps.bytes(b)
    local units = { "B", "KiB", "MiB", "GiB", "TiB" }
    local i = 1
    while b >= 1024 and i < #units do b = b / 1024; i = i + 1 end
    return string.format(i == 1 and "%.0f %s" or "%.2f %s", b, units[i])
end

-- Seconds as s/ms/us text.
function ps.seconds(t)
    if t >= 1 then return string.format("%.3f s", t) end
    if t >= 1e-3 then return string.format("%.3f ms", t * 1e3) end
    return string.format("%.3f us", t * 1e6)
end

ps.parse = core.parse

-- ps.nccl_tests{ op = "all_reduce", cluster = c, b = 8, e = "8G", f = 2,
-- g = 8 }: nccl-tests' size sweep and table (lua/pipesim/nccl_tests.lua).
function ps.nccl_tests(spec)
    return require("pipesim.nccl_tests").run(ps, spec)
end

-- ps.batch(fn, ...): calls fn(...) with every ps.run it makes committed
-- in batches, as a sweep's runs are (every 1000 runs or 0.1 s, and when
-- fn returns or raises), instead of one transaction and its syncs per run
-- (issue 28; docs/sweeps.md, "A loop of ps.run"). The explicit opt-out of
-- the per-run durability: a kill -9 inside fn loses the runs since the
-- last commit, ids already returned included, never part of a run.
-- Returns what fn returns; an error in fn is raised once the runs before
-- it are committed. Nested calls batch with the outermost.
local BATCH_DEPTH = 0

local function batch_end(ok, ...)
    BATCH_DEPTH = BATCH_DEPTH - 1
    local committed, err = true, nil
    if BATCH_DEPTH == 0 then committed, err = pcall(core.run_batch, false) end
    if not ok then error((...), 0) end
    if not committed then error("ps.batch: " .. tostring(err), 3) end
    return ...
end

function ps.batch(fn, ...)
    if type(fn) ~= "function" then
        error("ps.batch: expected a function (the runs to batch), got " .. check.show(fn), 2)
    end
    if BATCH_DEPTH == 0 then core.run_batch(true) end
    BATCH_DEPTH = BATCH_DEPTH + 1
    return batch_end(pcall(fn, ...))
end

-- ps.sweep{ name =, space = {...} | points = {...}, run = function(point)
-- return a ps.run table end }: lua/pipesim/sweep.lua.
function ps.sweep(spec)
    return require("pipesim.sweep").run(ps, spec, { json = json, at = set_sweep_at,
                                                    shared = SHARED_FIELDS })
end

-- ps.progress(false) silences the progress line a long sweep draws on a
-- terminal (it is on by default when stderr is a terminal, off otherwise).
function ps.progress(on)
    core.progress(on)
end
return ps
