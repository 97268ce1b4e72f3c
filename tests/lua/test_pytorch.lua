-- PyTorch's schedules through ps.run: names and class-name aliases, the V
-- chunk placement, p2p = "pytorch", forward-only runs.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local function layers(n, f, params)
    return F.layers(n, function(i) return { fwd_time = f or 1, params = params and (i - 1) or 0 } end)
end
local one = { weight_bytes = 1, grad_bytes = 0, optimizer_bytes = 0 }

-- ZB-V on the V placement: rank r holds stages r and 2p-1-r, so with
-- stage s holding s parameters every rank holds 2p - 1
local r = ps.run{ layers = layers(8, 0.5, true), stages = 4, virtual_stages = 2,
                    microbatches = 8, schedule = "zbv", memory = one, record = "none" }
for k = 1, 4 do H.near(r.static_memory[k], 7) end
H.near(r.makespan, 2 * 8 * 1.5 + 3 * 0.5, 1e-9, "zbv makespan")
H.eq(r.schedule, "zbv")
-- the loop placement puts stages r and r + p on rank r
r = ps.run{ layers = layers(8, 0.5, true), stages = 4, virtual_stages = 2,
              microbatches = 8, schedule = "interleaved_zb", memory = one, record = "none" }
for k = 1, 4 do H.near(r.static_memory[k], 2 * (k - 1) + 4) end
H.near(r.makespan, 2 * 8 * 1.5 + 3 * 0.5, 1e-9, "interleaved_zb makespan")

-- DualPipeV on the V placement (F and B of an overlapped pair in turn)
r = ps.run{ layers = layers(8, 0.5, true), stages = 4, virtual_stages = 2,
              microbatches = 8, schedule = "ScheduleDualPipeV", memory = one, record = "none" }
for k = 1, 4 do H.near(r.static_memory[k], 7) end
H.eq(r.schedule, "dualpipev")
H.raises(function() ps.run{ layers = layers(8), stages = 4, virtual_stages = 2,
    microbatches = 6, schedule = "dualpipev", record = "none" } end,
    "dualpipev schedule needs at least as many microbatches as stages (8), got 6")

-- PyTorch's class names, case-insensitively: the same run as the name
-- they stand for, whose bubble is the closed form (p - 1)/(v m + p - 1)
-- for the first three (p = 2, m = 4), less for the zero-bubble one
for _, c in ipairs{ { "ScheduleGPipe", "gpipe", 1, 1 / 5 }, { "Schedule1F1B", "1f1b", 1, 1 / 5 },
                    { "scheduleinterleaved1f1b", "interleaved_pytorch", 2, 1 / 9 },
                    { "ScheduleLoopedBFS", "looped_bfs", 2, 1 / 9 },
                    { "ScheduleInterleavedZeroBubble", "interleaved_zb", 2 } } do
    local function run(schedule)
        return ps.run{ layers = layers(4), stages = 2, virtual_stages = c[3], microbatches = 4,
                       schedule = schedule, record = "none" }
    end
    r = run(c[1])
    local want = run(c[2])
    H.eq(r.schedule, c[2], c[1])
    H.near(r.makespan, want.makespan, 1e-12, c[1])
    if c[4] then H.near(r.bubble, c[4], 1e-9, c[1] .. " bubble") end
end

-- interleaved_pytorch accepts m = 10 on p = 4 (two rounds of 5); Megatron's
-- interleaved does not
r = ps.run{ layers = layers(8, 0.5), stages = 4, virtual_stages = 2, microbatches = 10,
              schedule = "interleaved_pytorch", record = "none" }
-- two rounds of 5 reach the closed form (p - 1)/(v m + p - 1) = 3/23: 20
-- chunk steps of 1.5 on each rank, 30 / (1 - 3/23) = 34.5
H.near(r.bubble, 3 / 23, 1e-9, "interleaved_pytorch m=10 bubble")
H.near(r.makespan, 34.5, 1e-9, "interleaved_pytorch m=10")
H.raises(function() ps.run{ layers = layers(8, 0.5), stages = 4, virtual_stages = 2,
    microbatches = 10, schedule = "interleaved", record = "none" } end,
    "needs microbatches (10) to be a multiple of pipeline ranks (4)")

-- LoopedBFS's orders as a custom list: deadlock under Megatron's paired
-- lowering, run under p2p = "pytorch" like the built-in
local order = {
    { "F0", "F1", "F2", "F3", "F0.c1", "F1.c1", "F2.c1", "F3.c1",
        "B3.c1", "B2.c1", "B1.c1", "B0.c1", "B3", "B2", "B1", "B0" },
    { "F0", "F1", "F2", "F3", "F0.c1", "F1.c1", "F2.c1", "F3.c1",
        "B3.c1", "B2.c1", "B1.c1", "B0.c1", "B3", "B2", "B1", "B0" },
}
H.raises(function() ps.run{ layers = layers(4), stages = 2, virtual_stages = 2,
    microbatches = 4, schedule = order, record = "none" } end, "deadlock")
local c = ps.run{ layers = layers(4), stages = 2, virtual_stages = 2, microbatches = 4,
                    schedule = order, p2p = "pytorch", record = "none" }
local b = ps.run{ layers = layers(4), stages = 2, virtual_stages = 2, microbatches = 4,
                    schedule = "looped_bfs", record = "none" }
H.near(c.makespan, b.makespan, 1e-9)

-- a custom list on the V placement
local v = {
    { "F0", "F0.c1", "B0.c1", "B0" },
    { "F0", "F0.c1", "B0.c1", "B0" },
}
r = ps.run{ layers = layers(4), stages = 2, virtual_stages = 2, microbatches = 1,
              schedule = v, chunk_placement = "v", record = "none" }
H.near(r.makespan, 4 * 3, 1e-9, "a V walks the four stages in turn")

-- forward only: (m + p - 1) F and no activations kept
r = ps.run{ layers = layers(4), stages = 4, microbatches = 8, schedule = "forward_only",
              memory = one, record = "none" }
H.near(r.makespan, 11, 1e-9)
H.near(r.closed_form_bubble, 3 / 11, 1e-9, "forward-only closed form (p-1)/(m+p-1)")
H.near(r.bubble, 3 / 11, 1e-9)
for k = 1, 4 do H.near(r.peak_memory[k], r.static_memory[k]) end
r = ps.run{ layers = layers(2), stages = 2, microbatches = 2, record = "none",
              schedule = { { "F0", "F1" }, { "F0", "F1" } } }
H.near(r.makespan, 3, 1e-9, "a forward-only custom list")

-- data parallelism over a V: each chunk's buckets follow its own stage
local dc = ps.cluster{ ranks = 4, link = { bandwidth = "100 GB/s", latency = 0 } }
r = ps.run{ cluster = dc, layers = layers(4, 1, true), stages = 2, virtual_stages = 2,
              dp = 2, microbatches = 4, schedule = "zbv", record = "none" }
local r1 = ps.run{ cluster = dc, layers = layers(4, 1, true), stages = 2, virtual_stages = 2,
              microbatches = 4, schedule = "zbv", record = "none" }
-- the step is the replica's (25: zbv's closed form 2m(f+b+w) + ... as
-- above) plus the gradient sync its last rank cannot hide
H.near(r1.makespan, 25, 1e-12, "zbv without dp")
H.check(r.exposed_comm[2] > 0, "rank 1 waits on its gradient sync")
H.near(r.makespan, r1.makespan + math.max(r.exposed_comm[1], r.exposed_comm[2]), 1e-9, "zbv with dp")

-- errors
H.raises(function() ps.run{ layers = layers(8), stages = 4, virtual_stages = 2,
    microbatches = 8, schedule = "zbv", chunk_placement = "loop", record = "none" } end,
    "zbv schedule needs chunk_placement 'v'")
H.raises(function() ps.run{ layers = layers(12), stages = 4, virtual_stages = 3,
    microbatches = 8, schedule = "zbv", record = "none" } end,
    "chunk_placement 'v' needs 2 chunks per rank (virtual_stages 2), got 3")
H.raises(function() ps.run{ layers = layers(8), stages = 4, virtual_stages = 2,
    microbatches = 8, chunk_placement = "zigzag", record = "none" } end,
    "field 'chunk_placement': unknown placement 'zigzag' (expected loop, v or a list of { rank, chunk } per stage)")

H.done()
