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
local json = require("pipesim.json").json
local run_params = require "pipesim.run_params"
local params_json, collective_params = run_params.params_json, run_params.collective_params
-- the memo of a base sweep's points and of a plain loop of ps.run
local run_memo = require "pipesim.run_memo"
local memo_entry, plan_slot, loop_memo = run_memo.memo_entry, run_memo.plan_slot, run_memo.loop_memo
local checked_before, remember_checked = run_memo.checked_before, run_memo.remember_checked
local SHARED_FIELDS = run_memo.SHARED_FIELDS


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

-- Layer fields that carry units, and their kinds for core.parse: the
-- core's own list (core/bind/run.c layer_nums).
local LAYER_UNITS = core.layer_units()

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

-- Everything ps.run does before the core: field checks, model lowering
-- (TP, recompute), the partition. Returns the core's table, the TP plan
-- (or nil) and the partition; raises messages without a position, which
-- ps.run puts at the scenario's line. ps.search (lua/pipesim/search.lua)
-- calls it too, to cost a configuration without simulating it. memo (a
-- sweep's, or nil): layers checked and lowered once per sweep rather than
-- per point, with the same results.
local function prepare_run(spec, memo, loop)
    local m, plain
    if loop then -- a loop's memo entry (run_memo.loop_memo)
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
