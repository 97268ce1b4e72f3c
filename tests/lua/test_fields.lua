-- The field registry (core/bind/fields.c): every ps.run field the Lua
-- front end reads is written there once, with what the front end does
-- with it, and the Lua lists (lua/pipesim/fields.lua, run_memo.lua) are
-- derived from it; every field there is accepted by ps.run; a misspelt
-- one is refused with its suggestion.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local core = require "pipesim.core"
local fields = require "pipesim.fields"

local function set_of(list)
    local s = {}
    for _, k in ipairs(list) do s[k] = true end
    return s
end
local RUN, LAYER = set_of(core.fields.run), set_of(core.fields.layer)

-- 1. the roles name registered fields, and only known roles
do
    local KNOWN = { lower = true, trigger = true, plan = true, check = true, model = true }
    local n = 0
    for tbl, known in pairs { run = RUN, layer = LAYER } do
        for k, roles in pairs(core.field_roles[tbl]) do
            n = n + 1
            H.check(known[k], tbl .. " role for a registered field: " .. k)
            for r in pairs(roles) do H.check(KNOWN[r], k .. ": known role " .. r) end
        end
    end
    H.eq(n, 28, "fields with a role (21 of ps.run's plan fields, 2 triggers, 5 model layer fields)")
end

-- 2. every ps.run field the lowering reads (spec.x in its modules) is in
-- the registry, and every field marked `lower` is read by one of them
do
    local read = {}
    for _, m in ipairs { "parallel", "cp", "expert", "recompute", "layout" } do
        local path = package.searchpath("pipesim." .. m, package.path)
        local f = assert(io.open(path, "r"))
        local text = f:read("a")
        f:close()
        for k in text:gmatch("spec%.([%a_][%w_]*)") do read[k] = true end
    end
    read.layers = nil -- the layer list, checked field by field (core.fields.layer)
    local nread = 0
    for k in pairs(read) do
        nread = nread + 1
        H.check(RUN[k], "the lowering reads ps.run field '" .. k .. "', which the registry lacks")
    end
    H.check(nread >= #fields.FIELD_LIST, "the lowering's modules were read: " .. nread .. " fields")
    for _, k in ipairs(fields.FIELD_LIST) do
        H.check(read[k], "field '" .. k .. "' is marked lower but no lowering module reads it")
    end
    H.eq(fields.FIELD_LIST, { "cp", "cp_comm_type", "cp_hierarchy", "moe_dispatcher", "moe_imbalance",
        "recompute", "recompute_layers", "recompute_method", "recompute_modules",
        "sequence_parallel", "tp", "tp_comm", "tp_overlap" }, "the lowering's fields")
end

-- 3. every registered ps.run field is accepted (whatever its value's
-- error), but the two init.lua sets itself
do
    local INTERNAL = { meta = "ps.run: unknown field 'meta'", params_json = false }
    local base = { layers = { { fwd_time = 1 } }, stages = 1, microbatches = 1, record = "none" }
    local n = 0
    for _, k in ipairs(core.fields.run) do
        if INTERNAL[k] == nil then
            local t = {}
            for kk, v in pairs(base) do t[kk] = v end
            t[k] = t[k] or {}
            local ok, err = pcall(ps.run, t)
            H.check(ok or not tostring(err):find("unknown field '" .. k .. "'", 1, true),
                "ps.run accepts registered field '" .. k .. "': " .. tostring(err))
            n = n + 1
        end
    end
    H.eq(n, #core.fields.run - 2, "every field tried")
    H.raises(function() ps.run { layers = base.layers, stages = 1, microbatches = 1, meta = {} } end,
        INTERNAL.meta, "meta is init.lua's own")
end

-- 4. a misspelt field: the message names it and the registry's nearest
do
    local ok, err = pcall(ps.run, { layers = { { fwd_time = 1 } }, stages = 1, microbatches = 1,
        record = "none", tp_overlpa = true })
    H.check(not ok, "a misspelt field fails")
    H.eq(tostring(err):match("ps%.run: .*$"),
        "ps.run: unknown field 'tp_overlpa' (did you mean 'tp_overlap'?)", "the message")
end

-- 5. what the core reads of a lowered layer: every layer field but the
-- model's. The flex dispatcher's per-peer shares (lua/pipesim/expert.lua)
-- were once missing from a hand-written copy of this list, so model runs
-- sent the core none and it fell back to an even all-to-all.
do
    H.eq(fields.CORE_LAYER.moe_flex_nvl_share, true, "the flex shares reach the core")
    H.eq(fields.CORE_LAYER.shape, nil, "the shape stays in Lua")
    for _, k in ipairs { "kind", "shape", "active_params", "moe", "mtp" } do
        H.check(LAYER[k] and not fields.CORE_LAYER[k], "model field " .. k)
    end
    local model = ps.models.transformer { layers = 2, hidden = 1024, heads = 8, seq = 1024,
        vocab = 1000, experts = 8, topk = 2, expert_ffn = 512 }
    local spec = { cluster = ps.cluster(ps.clusters.dgx("H100", 2, { gpus_per_node = 2,
        nics_per_node = 2 })), layers = model, stages = 1, dp = 4, ep = 4,
        microbatches = 1, record = "none", moe_dispatcher = "flex" }
    -- the same layers as hand-written core layers, the shares included
    local plan = require("pipesim.parallel").prepare(spec, ps.clusters.device("H100"),
        function() return 0 end)
    -- test_ep.lua's flex pattern, at DeepEP's achieved rates on H100
    -- (models/moe_flex.lua DEEPEP: NVLink x 2 x 370 / 140, RDMA x 50 / 44)
    local nvl, rdma = 2 * 1024 * 13 / 28, 1024 * 22 / 28
    local knvl, krdma = 2 * 370 / 140, 50 / 44
    H.near(plan.layers[2].moe_flex_nvl_share, nvl / (nvl + rdma) * knvl, 1e-12,
        "lowered NVLink share")
    local args = {}
    require("pipesim.parallel").finish(plan, { #plan.layers }, args, nil, spec)
    H.near(args.layers[2].moe_flex_nvl_share, nvl / (nvl + rdma) * knvl, 1e-12,
        "in the core's layer")
    H.near(args.layers[2].moe_flex_rdma_share, rdma / (nvl + rdma) * krdma, 1e-12,
        "in the core's layer")
end

-- 6. the layer fields with units (core.layer_units, from the core's layer
-- reader, core/bind/run.c): each registered, each kind one core.parse
-- takes; the weighted partitions read unit strings through it
do
    local units, n = core.layer_units(), 0
    for k, kind in pairs(units) do
        n = n + 1
        H.check(LAYER[k], "unit field registered: " .. k)
        H.check(pcall(core.parse, 1, kind), k .. ": kind " .. kind)
    end
    H.eq(n, 31, "the core's numeric layer fields")
    H.eq({ units.fwd_flops, units.bwd_time, units.act_bytes, units.params, units.kept_bytes },
        { "flop", "time", "bytes", "flop", "bytes" }, "their kinds")
    local layers = { { fwd_time = "1 s", params = "3 GFLOP" }, { fwd_time = 1, params = 1e9 },
        { fwd_time = 1, params = 1e9 }, { fwd_time = 1, params = 1e9 } }
    local r = ps.run { layers = layers, stages = 2, microbatches = 4, partition = "params",
        record = "none" }
    H.eq(ps.partition.resolve("params", { { params = 3e9 }, { params = 1e9 }, { params = 1e9 },
        { params = 1e9 } }, 2), { 1, 3 }, "by parameters: 3 G alone")
    -- stage 0 runs layer 1 (F + B = 3 s), stage 1 layers 2-4 (9 s): 1F1B's
    -- sum of the stages and m - 1 more of the slowest (the even split: 30 s)
    H.near(r.makespan, 3 + 9 + 3 * 9, 1e-12, "the split by the parsed params")
end

H.done()
