-- Split backward (B input gradient, W weight gradient) and the zero-bubble
-- schedules through ps.run: layer fields, closed forms, memory, errors.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local function layers(n, fields) return F.layers(n, F.with({ fwd_time = 1 }, fields)) end
local nomem = { weight_bytes = 0, grad_bytes = 0, optimizer_bytes = 0 }

-- a total backward alone splits evenly: 1F1B with W right after B, F = 1,
-- B = W = 1: m(F+B+W) + (p-1)(F+B)
for _, p in ipairs{ 2, 4 } do
    for _, m in ipairs{ 1, 4, 8 } do
        local r = ps.run{ layers = layers(p), stages = p, microbatches = m,
                            split_backward = true, record = "none" }
        H.near(r.makespan, 3 * m + 2 * (p - 1), 1e-9, "1f1b split makespan")
        H.near(r.closed_form_bubble, 2 * (p - 1) / (3 * m + 2 * (p - 1)), 1e-9)
        H.near(r.bubble, r.closed_form_bubble, 1e-9)
        -- without the split it is 1F1B: 3(m+p-1)
        r = ps.run{ layers = layers(p), stages = p, microbatches = m, record = "none" }
        H.near(r.makespan, 3 * (m + p - 1), 1e-9)
    end
end

-- explicit parts, as times, as unit strings and as FLOPs
local split = layers(4, { bwd_input_time = 1, bwd_weight_time = 0.5 })
local r = ps.run{ layers = split, stages = 4, microbatches = 8, schedule = "zb_h1",
                    record = "none" }
H.near(r.makespan, 8 * 2.5 + 3 * (1 + 1 - 0.5), 1e-9, "zb_h1 makespan")
H.near(r.bubble, r.closed_form_bubble, 1e-9)
H.eq(r.schedule, "zb_h1")
local s2 = layers(4, { bwd_input_time = "1 s", bwd_weight_time = "500 ms" })
H.near(ps.run{ layers = s2, stages = 4, microbatches = 8, schedule = "zb_h1",
                 record = "none" }.makespan, r.makespan, 1e-9)
-- one part given: the other is the backward minus it (bwd_time 3 s)
local one = layers(4, { bwd_time = 3, bwd_weight_time = 1 })
r = ps.run{ layers = one, stages = 4, microbatches = 8, schedule = "zb_h1", record = "none" }
H.near(r.makespan, 8 * 4 + 3 * (1 + 2 - 1), 1e-9, "bwd_time minus the weight part")
local c = ps.cluster{ ranks = 2, device = { flops = "1 TFLOPS" } }
r = ps.run{ cluster = c, stages = 2, microbatches = 4, schedule = "zb_h1", record = "none",
              layers = { { fwd_flops = 1e12, bwd_input_flops = 1e12, bwd_weight_flops = 1e12 },
                           { fwd_flops = 1e12, bwd_input_flops = 1e12, bwd_weight_flops = 1e12 } } }
H.near(r.makespan, 4 * 3 + 1 * 1, 1e-9, "FLOPs split")

-- ZB-H2 with equal costs: m(F+B+W) + (p-1)F
r = ps.run{ layers = layers(4), stages = 4, microbatches = 8, schedule = "zb_h2",
              record = "none" }
H.near(r.makespan, 8 * 3 + 3, 1e-9, "zb_h2 makespan")
H.near(r.closed_form_bubble, 3 / 27, 1e-9)

-- memory: W keeps bwd_weight_bytes of the layer's activations after B
local mem = layers(4, { act_bytes = 100, bwd_weight_bytes = 25 })
local f = ps.run{ layers = mem, stages = 4, microbatches = 8, memory = nomem, record = "none" }
local h1 = ps.run{ layers = mem, stages = 4, microbatches = 8, schedule = "zb_h1",
                     memory = nomem, record = "none" }
local h2 = ps.run{ layers = mem, stages = 4, microbatches = 8, schedule = "zb_h2",
                     memory = nomem, record = "none" }
for s = 0, 3 do
    H.near(f.peak_memory[s + 1], 100 * (4 - s), 1e-9)
    H.near(h1.peak_memory[s + 1], 100 * (4 - s) + 25 * s, 1e-9, "zb_h1 peak")
    H.near(h2.peak_memory[s + 1], 100 * (7 - 2 * s) + 25 * (2 * s + 1), 1e-9, "zb_h2 peak")
end

-- custom lists with W; B of a unit without W is the full backward
local order = {
    { "F0", "F1", "B0", "W0", "F2", "B1", "W1", "F3", "B2", "W2", "B3", "W3" },
    { "F0", "B0", "F1", "B1", "W0", "F2", "B2", "W1", "F3", "B3", "W2", "W3" },
}
local custom = ps.run{ layers = layers(2), stages = 2, microbatches = 4,
                         schedule = order, record = "none" }
local zb = ps.run{ layers = layers(2), stages = 2, microbatches = 4,
                     schedule = "zb_h1", record = "none" }
H.near(custom.makespan, zb.makespan, 1e-9)
H.near(custom.makespan, 4 * 3 + 1, 1e-9)

-- data parallelism: gradients are ready after the W's
local dc = ps.cluster{ ranks = 4, link = { bandwidth = "100 GB/s", latency = 0 } }
r = ps.run{ cluster = dc, layers = layers(2, { params = 1e6 }), stages = 2, dp = 2,
              microbatches = 4, schedule = "zb_h1", record = "none" }
H.check(r.makespan > zb.makespan, "dp adds the gradient sync")

-- errors name the field and the values
H.raises(function() ps.run{ layers = layers(2, { bwd_time = 2, bwd_input_time = 1,
    bwd_weight_time = 2 }), stages = 2, microbatches = 2, record = "none" } end,
    "layers[1]: backward 2 s differs from its input part 1 s + weight part 2 s")
H.raises(function() ps.run{ layers = layers(2, { bwd_time = 2, bwd_weight_time = 3 }),
    stages = 2, microbatches = 2, record = "none" } end,
    "layers[1]: bwd_weight_time/flops (3 s) exceeds the backward (2 s)")
H.raises(function() ps.run{ layers = layers(2, { bwd_input_time = -1 }),
    stages = 2, microbatches = 2, record = "none" } end, "bwd_input_time")
H.raises(function() ps.run{ layers = layers(2), stages = 2, microbatches = 2,
    schedule = { { "F0", "W0", "B0", "F1", "B1" }, { "F0", "B0", "F1", "B1" } },
    record = "none" } end, "rank 0: W0 comes before B0")
H.raises(function() ps.run{ layers = layers(2), stages = 2, microbatches = 2,
    split_backward = "yes", record = "none" } end, "split_backward")

H.done()
