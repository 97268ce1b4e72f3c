-- PyTorch schedule CSV files (ps.schedule.load_pytorch): files in the form
-- PipelineScheduleMulti._dump_csv writes (csv.writer, None as empty
-- cells), comm cells, overlapped F/B cells, and errors naming line and cell.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

local function layers(n, f) return F.layers(n, { fwd_time = f, act_bytes = 1 }) end
local function run(order, info, extra)
    return ps.run(F.with({ layers = layers(info.stages * info.virtual_stages, 0.5 / info.virtual_stages),
                           schedule = order, stages = info.stages, virtual_stages = info.virtual_stages,
                           microbatches = info.microbatches, chunk_placement = info.chunk_placement,
                           p2p = "pytorch", record = "none" }, extra))
end

-- ZB-V as PyTorch dumps it (ranks start with idle cells): the V placement
-- is recognised and the run equals the built-in zbv
local order, info = ps.schedule.load_pytorch("tests/data/zbv_p4_m8.csv")
H.eq(info.stages, 4)
H.eq(info.virtual_stages, 2)
H.eq(info.microbatches, 8)
H.eq(info.chunk_placement, "v")
H.eq(order[1][8], "F0.c1")
H.eq(order[1][9], "B0.c1") -- I is the input-gradient B of a unit with a W
H.eq(order[1][10], "W0.c1")
local from_csv = run(order, info)
local builtin = ps.run{ layers = layers(8, 0.25), stages = 4, virtual_stages = 2,
                          microbatches = 8, schedule = "zbv", record = "none" }
H.near(from_csv.makespan, builtin.makespan, 1e-9, "zbv from its CSV")

-- interleaved zero bubble with its inserted bubbles (empty cells)
order, info = ps.schedule.load_pytorch("tests/data/interleaved_zb_p3_v2_m3.csv", { stages = 3 })
H.eq(info.chunk_placement, "loop")
from_csv = run(order, info)
builtin = ps.run{ layers = layers(6, 0.25), stages = 3, virtual_stages = 2, microbatches = 3,
                    schedule = "interleaved_zb", record = "none" }
H.near(from_csv.makespan, builtin.makespan, 1e-9, "interleaved_zb from its CSV")

-- DualPipeV's dump: an overlapped F/B cell is one FB action, full
-- backwards (B) beside I/W pairs; it runs as the built-in dualpipev
order, info = ps.schedule.load_pytorch("tests/data/dualpipev_p2_m4.csv")
H.eq(info.chunk_placement, "v")
H.eq(order[1][8], "FB3/1.c1")
H.eq(order[1][9], "FB2.c1/0")
from_csv = run(order, info)
builtin = ps.run{ layers = layers(4, 0.25), stages = 2, virtual_stages = 2, microbatches = 4,
                    schedule = "dualpipev", record = "none" }
H.near(from_csv.makespan, builtin.makespan, 1e-9, "dualpipev from its CSV")

-- stages placed neither as loop nor as v: an explicit chunk_placement,
-- a rank's chunks its stages in ascending order; stage 0 runs on rank 1
order, info = ps.schedule.load_pytorch("tests/data/placement_list_p2.csv")
H.eq(info.chunk_placement[1][1], 1)
H.eq(info.chunk_placement[1][2], 0)
H.eq(info.chunk_placement[3][1], 0)
H.eq(info.chunk_placement[3][2], 1)
H.eq(order[1][2], "F0.c1")
from_csv = run(order, info)
-- 4 stages of 0.25 one after the other, forward and backward (2 x)
H.near(from_csv.makespan, 4 * 0.25 * 3, 1e-9, "explicit placement from its CSV")

-- errors name the file, line and cell
local dir = "tests/data/"
H.raises(function() ps.schedule.load_pytorch(dir .. "bad_action.csv") end,
    "tests/data/bad_action.csv:2: cell 3: bad action '1Q1'")
H.raises(function() ps.schedule.load_pytorch("tests/data/zbv_p4_m8.csv", { stages = 2 }) end,
    "tests/data/zbv_p4_m8.csv: 4 rows but 2 pipeline ranks (stages)")
H.raises(function() ps.schedule.load_pytorch(dir .. "i_without_w.csv") end,
    "tests/data/i_without_w.csv:1: cell 3: 0I1 has no 0W1")
H.raises(function() ps.schedule.load_pytorch(dir .. "missing.csv") end, "cannot open")
H.raises(function() ps.schedule.load_pytorch("tests/data/zbv_p4_m8.csv", { ranks = 2 }) end,
    "unknown field 'ranks'")

H.done()
