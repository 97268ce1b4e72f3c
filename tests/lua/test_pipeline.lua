-- ps.run through the Lua front end: closed forms, returned fields,
-- partitions, units, recording levels and error positions.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local function layers(n, fwd, extra) return F.layers(n, F.with({ fwd_time = fwd or 1 }, extra)) end

-- GPipe and 1F1B: 3(m+p-1) and (p-1)/(m+p-1) with forward 1, backward 2
for _, sched in ipairs{ "gpipe", "afab", "1f1b" } do
    for _, p in ipairs{ 2, 4, 8 } do
        for _, m in ipairs{ 1, 4, 8, 64 } do
            local r = ps.run{ layers = layers(p), stages = p, microbatches = m,
                                schedule = sched, record = "none" }
            H.near(r.makespan, 3 * (m + p - 1), 1e-9, sched .. " makespan")
            H.near(r.bubble, (p - 1) / (m + p - 1), 1e-9, sched .. " bubble")
            H.near(r.closed_form_bubble, (p - 1) / (m + p - 1), 1e-9)
            H.eq(#r.stage_bubble, p)
        end
    end
end
local r = ps.run{ layers = layers(4), stages = 4, microbatches = 8, record = "none" }
H.eq(string.format("%.2f%%", 100 * r.bubble), "27.27%")
r = ps.run{ layers = layers(4), stages = 4, microbatches = 64, record = "none" }
H.eq(string.format("%.2f%%", 100 * r.bubble), "4.48%")

-- interleaved: (p-1)/(v*m+p-1); each chunk half the work
for _, p in ipairs{ 2, 4 } do
    for _, v in ipairs{ 2, 3 } do
        local m = 2 * p
        r = ps.run{ layers = layers(p * v, 1 / v), stages = p, virtual_stages = v,
                      microbatches = m, schedule = "interleaved", record = "none" }
        H.near(r.bubble, (p - 1) / (v * m + p - 1), 1e-9, "interleaved bubble")
        H.near(r.closed_form_bubble, (p - 1) / (v * m + p - 1), 1e-9)
    end
end

-- peak activation memory: GPipe m, 1F1B min(p - s, m) microbatches
local act = layers(4, 1, { act_bytes = 1000, params = 10 })
local memory = { weight_bytes = 1, grad_bytes = 1, optimizer_bytes = 2 }
for _, m in ipairs{ 2, 8 } do
    local g = ps.run{ layers = act, stages = 4, microbatches = m, schedule = "gpipe",
                        memory = memory, record = "none" }
    local f = ps.run{ layers = act, stages = 4, microbatches = m, schedule = "1f1b",
                        memory = memory, record = "none" }
    for s = 0, 3 do
        H.near(g.static_memory[s + 1], 40)
        H.near(g.peak_memory[s + 1] - g.static_memory[s + 1], 1000 * m)
        H.near(f.peak_memory[s + 1] - f.static_memory[s + 1], 1000 * math.min(4 - s, m))
    end
end

-- default static memory: 2 + 2 + 12 bytes per parameter
r = ps.run{ layers = layers(2, 1, { params = 1e9 }), stages = 2, microbatches = 2,
              record = "none" }
H.near(r.static_memory[1], 16e9)

-- checkpointing keeps only the input and adds a recompute per microbatch
local ck = layers(2, 1, { act_bytes = 100, out_bytes = 0, in_bytes = 10 })
local full = ps.run{ layers = ck, stages = 2, microbatches = 4, memory = memory,
                       record = "none" }
local cp = ps.run{ layers = ck, stages = 2, microbatches = 4, memory = memory,
                     checkpoint = true, record = "none" }
H.near(full.makespan, 3 * 5)
H.near(cp.makespan, 4 * 5)
H.near(full.peak_memory[1], 200)       -- 2 microbatches x 100 on stage 0
H.near(cp.peak_memory[1], 10 + 100)    -- one kept input + one recomputed

-- units: strings and numbers mean the same
local a = ps.run{ layers = layers(2, "1 s"), stages = 2, microbatches = 2, record = "none" }
local b = ps.run{ layers = layers(2, 1), stages = 2, microbatches = 2, record = "none" }
H.eq(a.makespan, b.makespan)

-- FLOPs on a device: 1e12 FLOP at 1e12 FLOP/s * 0.5 = 2 s forward
local c = ps.cluster{ ranks = 2, device = { flops = "1 TFLOPS", efficiency = 0.5 } }
r = ps.run{ cluster = c, layers = { { fwd_flops = "1 TFLOP" }, { fwd_flops = 1e12 } },
              stages = 2, microbatches = 1, record = "none" }
H.near(r.makespan, 2 * (2 + 4))
H.eq(c.ranks, 2)

-- a straggler: rank 1 at half speed sets the pace
c = ps.cluster{ ranks = 2, device = { flops = "1 TFLOPS" },
                  devices = { [1] = { flops = "0.5 TFLOPS" } } }
r = ps.run{ cluster = c, layers = { { fwd_flops = 1e12 }, { fwd_flops = 1e12 } },
              stages = 2, microbatches = 4, schedule = "gpipe", record = "none" }
-- stage 1 takes 2 s forward and 4 s backward: 1 + 4*2 + 4*4 + 2 = 27
H.near(r.makespan, 27)
H.eq(r.closed_form_bubble, nil)

-- communication: GPipe with c = 0.25 s per boundary, eager: + 2(p-1)c
c = ps.cluster{ ranks = 4, link = { bandwidth = "4 B/s", latency = 0 } }
r = ps.run{ cluster = c, layers = layers(4, 1, { out_bytes = 1 }), stages = 4,
              microbatches = 8, schedule = "gpipe", p2p = "eager", record = "none" }
H.near(r.makespan, 3 * 11 + 2 * 3 * 0.25)
H.eq(r.closed_form_bubble, nil)

-- custom schedule: 1F1B written out by hand equals the built-in
local order = {
    { "F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3" },
    { "F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3" },
}
local custom = ps.run{ layers = layers(2), stages = 2, microbatches = 4,
                         schedule = order, record = "none" }
local builtin = ps.run{ layers = layers(2), stages = 2, microbatches = 4,
                          schedule = "1f1b", record = "none" }
H.near(custom.makespan, builtin.makespan)
H.eq(custom.schedule, "custom")

-- recorded runs get increasing ids and names
local r1 = ps.run{ name = "first", layers = layers(2), stages = 2, microbatches = 2 }
local r2 = ps.run{ layers = layers(2), stages = 2, microbatches = 2, record = "summary" }
H.check(r1.id and r2.id and r2.id == r1.id + 1, "ids increase")
H.eq(r1.name, "first")
H.eq(r2.name, "1f1b")

-- errors point at this file's line and name the field
H.raises(function() ps.run{ layers = layers(2), stages = 2, microbatches = 2,
    schedule = "zigzag" } end, "test_pipeline.lua:")
H.raises(function() ps.run{ layers = layers(2), stages = 2, microbatches = 2,
    virtual_stages = 2, schedule = "interleaved" } end, "4 stages (stages 2 x virtual_stages 2) but only 2 layers")
H.raises(function() ps.run{ layers = layers(4), stages = 4, microbatches = 6,
    virtual_stages = 1, schedule = "interleaved" } end, "ps.run:")
H.raises(function() ps.run{ layers = { { fwd_time = "1 GB" } }, stages = 1,
    microbatches = 1 } end, "field 'layers[1].fwd_time': '1 GB' is a size in bytes, expected a time")
H.raises(function() ps.cluster{ ranks = 0 } end, "field 'ranks' must be an integer in 1..1048576, got 0")
H.raises(function() ps.cluster{ ranks = 2, device = { efficiency = 2 } } end,
    "field 'device.efficiency' must be in (0, 1], got 2")
H.raises(function() ps.run(5) end, "ps.run: expected a table of fields, got number")

H.done()
