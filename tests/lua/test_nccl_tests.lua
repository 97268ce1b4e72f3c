-- ps.nccl_tests: nccl-tests' sizes, flags and table layout (src/util.cu,
-- src/common.cu) and its busbw factors (doc/PERFORMANCE.md), on simulated
-- DGX clusters.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local nt = require "pipesim.nccl_tests"

H.eq(nt.parse_size("8"), 8)
H.eq(nt.parse_size("64K"), 65536)
H.eq(nt.parse_size("1m"), 1048576)
H.eq(nt.parse_size("8G"), 8589934592)
H.eq(nt.parse_size("8X"), nil)
H.eq(nt.parse_size("-1"), nil)
local s = nt.sizes(8, 64, 2)
H.eq(#s, 4); H.eq(s[1], 8); H.eq(s[4], 64)
s = nt.sizes(8, 32, 1, 8)
H.eq(#s, 4); H.eq(s[4], 32)
s = nt.sizes(0, 0, 2)
H.eq(#s, 1); H.eq(s[1], 0)
H.eq(nt.float_str(1234.5678, 7), "1234.57")
H.eq(nt.float_str(123456.78, 7), " 123457")
H.eq(nt.float_str(12345678.9, 7), "1.2e+07")

local c = ps.cluster(ps.clusters.dgx("h100", 1))
local text = {}
local rows = ps.nccl_tests{ op = "all_reduce", cluster = c, b = 8, e = "1M", f = 4,
                              print = function(x) text[#text + 1] = x end }
local all = table.concat(text)
local lines = {}
for l in all:gmatch("[^\n]*\n") do lines[#lines + 1] = l end
-- nccl-tests' writeResultHeader, column for column
H.eq(lines[3], string.format("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "", ""))
H.eq(lines[4], "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n")
H.eq(lines[5], "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n")
-- 8, 32, 128, ..., 512K (times 4 while <= 1M)
H.eq(#rows, 9)
H.eq(rows[1].size, 8)
H.eq(rows[9].size, 512 * 1024)
for k, r in ipairs(rows) do
    H.eq(r.count, r.size // 4)
    H.near(r.busbw, r.algbw * 2 * 7 / 8, 1e-12, "allreduce busbw factor")
    -- a data row: size, count, type, redop, root, then the two bodies
    local l = lines[5 + k]
    H.eq(l:sub(1, 12), string.format("%12d", r.size))
    H.check(l:find("  float     sum      -1  ", 1, true) ~= nil, l)
    local us = nt.float_str(r.time * 1e6, 7)
    local body = string.format("  %7s  %6s  %6s    N/A", us, nt.float_str(r.algbw / 1e9, 6),
        nt.float_str(r.busbw / 1e9, 6))
    H.eq(l, string.format("%12d  %12d  %8s  %6s  %6s", r.size, r.count, "float", "sum", "    -1")
        .. body .. body .. "\n")
end
-- the other ops' factors (PERFORMANCE.md): (n-1)/n, 1 for the rooted
-- ones and sendrecv
for op, factor in pairs{ all_gather = 7 / 8, reduce_scatter = 7 / 8, alltoall = 7 / 8,
                           broadcast = 1, reduce = 1, sendrecv = 1 } do
    local r = ps.nccl_tests{ op = op, cluster = c, b = "64K", e = "64K", print = false }
    H.eq(#r, 1)
    H.near(r[1].busbw, r[1].algbw * factor, 1e-12, op .. " busbw factor")
end
-- -g: the first N GPUs; alltoall and allgather round the count to
-- nranks x 4 floats as nccl-tests does
local r = ps.nccl_tests{ op = "alltoall", cluster = c, b = 1000, e = 1000, g = 4, print = false }
H.eq(r[1].count, 240) -- 250 floats: 62 per rank, down to 60
-- nccl-tests' step (src/common.cu): without -f, sizes go up by -i, 1M by
-- default (stepFactor 1, stepBytes 1M); -f above 1 wins over -i; -f 1 is
-- the additive step too
for _, case in ipairs{ { {}, { 1, 2, 3 } }, { { f = 1 }, { 1, 2, 3 } },
                       { { i = "512K" }, { 1, 1.5, 2, 2.5, 3 } },
                       { { f = 2, i = "512K" }, { 1, 2 } } } do
    local spec = { op = "all_reduce", cluster = c, b = "1M", e = "3M", print = false }
    for k, v in pairs(case[1]) do spec[k] = v end
    local got = ps.nccl_tests(spec)
    H.eq(#got, #case[2], "nccl-tests step: sizes")
    for k, mib in ipairs(case[2]) do H.eq(got[k].size, math.tointeger(mib * 2 ^ 20)) end
end
-- bad flags
H.raises(function() ps.nccl_tests{ op = "all_reduce", cluster = c, b = "8X" } end,
    "-b: expected a size such as 8, 64K or 8G, got '8X'")
H.raises(function() ps.nccl_tests{ op = "all_reduce", cluster = c, b = "1M", e = 8 } end,
    "-b 1048576 is larger than -e 8")
H.raises(function() ps.nccl_tests{ op = "all_reduce", cluster = c, f = 0 } end,
    "-f: expected an integer factor >= 1, got '0'")
H.raises(function() ps.nccl_tests{ op = "all_reduce", cluster = c, b = 0, e = 64, f = 2 } end,
    "-b 0 with -f 2 never grows: start at -b 1 or more, or step with -i")
H.raises(function() ps.nccl_tests{ op = "all_reduce", cluster = c, b = 8, e = "8G", i = 1 } end,
    "-b 8 -e 8589934592 -i 1 gives 8589934585 sizes, at most 100000: take a larger -i, or -f 2")
H.raises(function() ps.nccl_tests{ op = "all_reduce", cluster = c, g = 9 } end,
    "-g: expected 1 to 8 GPUs, got '9'")
H.raises(function() ps.nccl_tests{ op = "allreduce_perf", cluster = c } end,
    "unknown op 'allreduce_perf'")
H.done()
