-- The checking vocabulary (core/bind/check.c, core/bind/fields.c): what is
-- accepted (spellings users type) and how the shared checker reports;
-- the bad inputs themselves are tests/errors/*.lua cases.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local core = require "pipesim.core"
local check = require "pipesim.argcheck"

local layers = {}
for i = 1, 4 do layers[i] = { fwd_time = 1, bwd_time = 2 } end

-- 1. Schedule names are case-insensitive: "1F1B", "GPipe", "Interleaved"
-- run the same schedule as their lowercase spelling (3(m+p-1) for GPipe
-- and 1F1B with p = 2, m = 4 and 2 + 4 s per stage: 30 s).
do
    local function run(s, v)
        return ps.run{ layers = layers, stages = 2, microbatches = 4, schedule = s,
                         virtual_stages = v, record = "none" }
    end
    for _, pair in ipairs { { "1F1B", "1f1b" }, { "GPipe", "gpipe" }, { "AFAB", "afab" } } do
        local a, b = run(pair[1]), run(pair[2])
        H.eq(a.schedule, b.schedule, pair[1] .. " is " .. pair[2])
        H.eq(a.makespan, b.makespan, pair[1] .. " makespan")
    end
    H.near(run("GPipe").makespan, 30, 1e-12, "GPipe closed form")
    local i1, i2 = run("Interleaved", 2), run("interleaved", 2)
    H.eq(i1.schedule, "interleaved", "Interleaved")
    H.eq(i1.makespan, i2.makespan, "Interleaved makespan")
    H.raises(function() run("ZigZag") end, "unknown schedule 'zigzag'")
end

-- 2. TFLOPs (and GFLOPs, PFLOPs, FLOPs) is a rate where a rate is wanted
-- and a count where a count is wanted.
do
    H.eq(ps.parse("989 TFLOPs", "flop_rate"), 989e12, "TFLOPs as a rate")
    H.eq(ps.parse("989 TFLOPS", "flop_rate"), 989e12, "TFLOPS")
    H.eq(ps.parse("3.5 TFLOPs", "flop"), 3.5e12, "TFLOPs as a count")
    H.eq(ps.parse("2 PFLOPs", "flop_rate"), 2e15, "PFLOPs")
    H.eq(ps.parse("7 GFLOPs", "flop"), 7e9, "GFLOPs")
    H.eq(ps.parse("12 FLOPs", "flop"), 12, "FLOPs")
    H.raises(function() ps.parse("1 TFLOPs", "time") end,
        "'1 TFLOPs' is a flop count or rate, expected a time")
    -- a run with the device written in TFLOPs equals one written in TFLOPS
    local function step(rate, flops)
        local c = ps.cluster{ ranks = 2, device = { flops = rate } }
        local l = { { fwd_flops = flops }, { fwd_flops = flops } }
        return ps.run{ cluster = c, layers = l, stages = 2, microbatches = 2, record = "none" }.makespan
    end
    H.eq(step("100 TFLOPs", "1 TFLOPs"), step("100 TFLOPS", "1 TFLOP"), "TFLOPs run")
    H.near(step("100 TFLOPs", "1 TFLOPs"), 9 * 0.01, 1e-12, "3(m+p-1) x 10 ms")
end

-- 3. The unit parser reads the whole Lua string: a NUL byte inside is an
-- error, not the end of the text.
do
    H.raises(function() ps.parse("5 us\0junk", "time") end, "'5 us\\0junk' contains a NUL byte")
    H.near(ps.parse(" 5 us ", "time"), 5e-6, 1e-15, "spaces around")
end

-- 4. core.fields: the binding's lists, as the Lua modules see them.
do
    local function has(list, name)
        for _, v in ipairs(list) do if v == name then return true end end
        return false
    end
    for _, tbl in ipairs { "run", "memory", "grad_sync", "layer", "cluster", "device",
                             "link", "links_entry", "collective" } do
        H.check(type(core.fields[tbl]) == "table" and #core.fields[tbl] > 0, "core.fields." .. tbl)
    end
    H.check(has(core.fields.layer, "bwd_time"), "layer has bwd_time")
    H.check(has(core.fields.device, "efficiency"), "device has efficiency")
    H.check(not has(core.fields.link, "bw"), "link has no bw")
    local sorted = true
    for _, list in pairs(core.fields) do
        for i = 2, #list do if list[i - 1] >= list[i] then sorted = false end end
    end
    H.check(sorted, "every list is sorted and has no duplicate")
end

-- 5. One message format from Lua and C: the first unknown key in sorted
-- order (not table order), a suggestion when one is close, the known
-- names when none is.
do
    local known = { "bandwidth", "latency" }
    H.raises(function() check.known_fields({ zeta = 1, bandwith = 1, alpha = 1 }, known, "link") end,
        "link: unknown field 'alpha' (known: bandwidth, latency)")
    H.raises(function() check.known_fields({ bandwith = 1 }, { bandwidth = true }, "link") end,
        "link: unknown field 'bandwith' (did you mean 'bandwidth'?)")
    H.raises(function() check.known_fields({ 1 }, known, "") end, "unknown field [1]")
    H.eq(check.suggest("latncy", known), "latency", "suggest")
    H.eq(check.suggest("xyz", known), nil, "nothing close")
    -- the same from the binding, and for nested tables it names the path
    H.raises(function() ps.cluster{ ranks = 2, link = { latncy = 1 } } end,
        "ps.cluster: link: unknown field 'latncy' (did you mean 'latency'?)")
end

-- 6. Preset overrides take the fields ps.cluster takes (not only those the
-- preset sets), checked with the same lists.
do
    local spec = ps.clusters.dgx("H100", 1, { sharing = "fifo", device = { efficiency = 0.3 },
                                                inter = { latency = 8e-6 } })
    H.eq(spec.sharing, "fifo", "a field the preset does not set")
    H.eq(spec.device.efficiency, 0.3, "nested override")
    H.eq(spec.device.flops, 989e12, "the rest of the device kept")
    H.eq(spec.inter.latency, 8e-6, "inter latency")
    H.check(spec.inter.bandwidth ~= nil, "inter bandwidth kept")
    local c = ps.cluster(spec)
    H.eq(c.sharing, "fifo", "the cluster takes it")
    local d = ps.clusters.device("H100", { hbm_bandwidth = 3e12 })
    H.eq(d.hbm_bandwidth, 3e12, "roofline constants are overridable")
end

-- 7. Integral floats are integers (2.0 is 2); checked in 64 bits.
do
    local r = ps.run{ layers = layers, stages = 2.0, microbatches = 4.0, record = "none" }
    H.eq(r.stages, 2, "stages 2.0")
    H.eq(r.microbatches, 4, "microbatches 4.0")
    local c = ps.cluster{ ranks = 4.0 }
    H.eq(c.ranks, 4, "ranks 4.0")
end

-- 8. ps.run checks before the Lua layer computes from a field: a bad count
-- reaches the binding's message, not a Lua arithmetic error.
do
    H.raises(function() ps.run{ layers = layers, stages = {}, microbatches = 2 } end,
        "field 'stages' must be an integer in 1..1048576, got a table")
    H.raises(function() ps.run{ layers = "all", stages = 2, microbatches = 2 } end,
        "field 'layers' must be a table (a list of layer tables), got 'all'")
    H.raises(function() ps.run{ layers = {}, stages = 2, microbatches = 2 } end,
        "field 'layers' is empty")
    H.raises(function() ps.run{ layers = layers, microbatches = 2 } end,
        "missing field 'stages'")
end

-- 9. Fractions are plain numbers or percentages.
do
    H.near(ps.parse("45%", "ratio"), 0.45, 1e-15, "45%")
    H.eq(ps.parse("0.45", "ratio"), 0.45, "a bare number")
    local function step(eff)
        local c = ps.cluster{ ranks = 2, device = { flops = "100 TFLOPS", efficiency = eff } }
        local l = { { fwd_flops = "1 TFLOP" }, { fwd_flops = "1 TFLOP" } }
        return ps.run{ cluster = c, layers = l, stages = 2, microbatches = 2, record = "none" }.makespan
    end
    H.near(step("50%"), step(0.5), 1e-12, "efficiency 50% is 0.5")
    H.raises(function() ps.parse("5 us", "ratio") end, "'5 us' is a time, expected a number")
end

H.done()
