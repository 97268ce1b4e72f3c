-- pipesim calibrate (issue 27 item 17; lua/pipesim/calibrate.lua,
-- lua/pipesim/nccl_log.lua, docs/calibrate.md): the fit recovers known
-- link and GEMM constants from synthetic measurements, real nccl-tests
-- logs (tests/data/nccl_logs, SOURCES.md) are reproduced by the written
-- file within the error its header states, and bad logs and CSVs fail
-- with one line naming the file, line and field.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local C = require "pipesim.calibrate"
local P = require "pipesim.nccl_log"
local roofline = require "pipesim.models.roofline"

local function read(path)
    local f = assert(io.open(path, "rb"))
    local t = f:read("a")
    f:close()
    return t
end

-- the error of calibrate.cli on opts, or nil when it succeeds
local function err_of(opts)
    local ok, e = pcall(C.cli, ps, opts)
    return not ok and e or nil
end

-- nccl-tests' table of a simulated all_reduce (pipesim's front end prints
-- nccl-tests' layout, without rank lines)
local function synthetic(cluster, g)
    local out = {}
    ps.nccl_tests { op = "all_reduce", cluster = cluster, b = 8, e = "1G", f = 4, g = g,
                    record = "none", print = function(s) out[#out + 1] = s end }
    return table.concat(out)
end

-- The written file's own reproduction of the points: its simulated times
-- against the measured ones, RMS and max |error|.
local function reproduce(text, runs)
    local t = assert(load(text, "=calibrated", "t", {}))()
    local c = ps.cluster(t)
    local s2, n, worst = 0, 0, 0
    for _, p in ipairs(C.points_of(runs)) do
        local per, ranks = p.ranks // p.nodes, {}
        for node = 0, p.nodes - 1 do
            for k = 0, per - 1 do ranks[#ranks + 1] = node * t.gpus_per_node + k end
        end
        local r = ps.collective { cluster = c, op = p.op, bytes = p.bytes, ranks = ranks, record = "none" }
        local e = r.time / p.time - 1
        s2, n, worst = s2 + e * e, n + 1, math.max(worst, math.abs(e))
    end
    return math.sqrt(s2 / n), worst, t
end

-- the header's "collectives: RMS a%, max b%"
local function stated(text)
    local a, b = text:match("\n%-%- collectives: RMS ([%d.]+)%%, max ([%d.]+)%%\n")
    return tonumber(a) / 100, tonumber(b) / 100
end

-- 1. synthetic: a DGX A100 with known links, measured on one node and on
-- two; the fit starts from the preset's (different) constants
do
    local truth = { intra = { bandwidth = 150e9, latency = 1.3e-6 },
                    inter = { bandwidth = 10e9, latency = 4e-6 } }
    local c = ps.cluster(ps.clusters.dgx("a100", 2, truth))
    local runs = {}
    for _, g in ipairs { 8, 16 } do
        for _, r in ipairs(P.parse(synthetic(c, g), "syn" .. g .. ".log", { ranks = g, nodes = g // 8 })) do
            runs[#runs + 1] = r
        end
    end
    H.eq(#runs, 2, "two tables")
    local text, res = C.calibrate(ps, { base = ps.clusters.dgx("a100", 2), points = C.points_of(runs) })
    local got = res.cluster
    H.near(got.intra.bandwidth, 150e9, 1e-2, "intra bandwidth recovered")
    H.near(got.intra.latency, 1.3e-6, 1e-2, "intra latency recovered")
    H.near(got.inter.bandwidth, 10e9, 1e-2, "inter bandwidth recovered")
    H.near(got.inter.latency, 4e-6, 1e-2, "inter latency recovered")
    H.check(res.max < 0.005, "synthetic reproduced within 0.5% (the log's rounding): " .. res.max)
    local rms, max = reproduce(text, runs)
    local srms, smax = stated(text)
    H.check(math.abs(rms - srms) < 6e-4 and math.abs(max - smax) < 6e-4,
        string.format("stated error %.4f/%.4f is the file's %.4f/%.4f", srms, smax, rms, max))
end

-- textbook links (no NCCL constants): a 2 x 4 cluster, fitted from the
-- measurements' own starting point
do
    local truth = { nodes = 2, gpus_per_node = 4, intra = { bandwidth = 80e9, latency = 2e-6 },
                    inter = { bandwidth = 12e9, latency = 6e-6 } }
    local c = ps.cluster(truth)
    local runs = {}
    for _, g in ipairs { 4, 8 } do
        for _, r in ipairs(P.parse(synthetic(c, g), "tb" .. g .. ".log", { ranks = g, nodes = g // 4 })) do
            runs[#runs + 1] = r
        end
    end
    local _, res = C.calibrate(ps, { base = { nodes = 2, gpus_per_node = 4 }, points = C.points_of(runs) })
    H.near(res.cluster.intra.bandwidth, 80e9, 1e-2, "textbook intra bandwidth")
    H.near(res.cluster.intra.latency, 2e-6, 1e-2, "textbook intra latency")
    H.near(res.cluster.inter.bandwidth, 12e9, 1e-2, "textbook inter bandwidth")
    H.near(res.cluster.inter.latency, 6e-6, 1e-2, "textbook inter latency")
end

-- GEMMs: times from the roofline with gemm_max 0.7 and 8 us of overhead,
-- one of them memory-bound (k = 64): recovered to rounding
do
    local dev = ps.clusters.device("h100", { gemm_max = 0.7, gemm_overhead = 8e-6 })
    local rows = {}
    for _, s in ipairs { { 4096, 4096, 4096 }, { 8192, 8192, 1024 }, { 2048, 2048, 2048 },
                         { 16384, 4096, 8192 }, { 65536, 4096, 64 } } do
        rows[#rows + 1] = { m = s[1], n = s[2], k = s[3], dtype = "bf16",
                            seconds = roofline.gemm_time(dev, s[1], s[2], s[3], 1, 2) }
    end
    local gmax, oh, used = C.fit_gemm(ps.clusters.device("h100"), rows)
    H.near(gmax, 0.7, 1e-9, "gemm_max recovered")
    H.near(oh, 8e-6, 1e-6, "gemm_overhead recovered")
    H.eq(used[5], false, "the memory-bound GEMM is left out of the fit")
    local csv = "m,n,k,dtype,seconds\n"
    for _, r in ipairs(rows) do
        csv = csv .. string.format("%d,%d,%d,%s,%.17g\n", r.m, r.n, r.k, r.dtype, r.seconds)
    end
    local text = C.cli(ps, { gemms = { { name = "g.csv", text = csv } }, cluster = "h100" })
    local t = assert(load(text, "=g", "t", {}))()
    H.near(t.device.gemm_max, 0.7, 1e-9, "the file's gemm_max")
    H.check(text:find("GEMMs: RMS 0.0%, max 0.0%", 1, true) ~= nil, "GEMMs reproduced")
end

-- 2. real logs: the file reproduces them within the error it states
local LOGS = "tests/data/nccl_logs/"
for _, case in ipairs {
    { "a100_40g_2x8_oci.log", rms = 0.15 },            -- 2 x 8 A100 40GB (OCI BM.GPU4.8)
    { "h100_2x8_ib_noranks.log", ranks = 16, nodes = 2, cluster = "h100", rms = 0.05 },
    { "v100_dgx2_12gpu.log" },                         -- DGX-2, three ops, older layouts
} do
    local name = LOGS .. case[1]
    local opts = { logs = { { name = name, text = read(name) } }, ranks = case.ranks,
                   nodes = case.nodes, cluster = case.cluster }
    local text, warnings = C.cli(ps, opts)
    local runs = P.parse(read(name), name, { ranks = case.ranks, nodes = case.nodes })
    local rms, max, t = reproduce(text, runs)
    local srms, smax = stated(text)
    H.check(math.abs(rms - srms) < 6e-4 and math.abs(max - smax) < 6e-4,
        string.format("%s: stated error %.4f/%.4f is the file's %.4f/%.4f", case[1], srms, smax, rms, max))
    if case.rms then H.check(rms <= case.rms, string.format("%s: RMS %.3f", case[1], rms)) end
    H.check(t.nodes >= 1 and t.inter and t.intra, case[1] .. ": a cluster table")
    print(string.format("calibrate %s: RMS %.1f%%, max %.1f%%; inter %.4g GB/s %.4g us, intra %.4g GB/s "
        .. "%.4g us%s", case[1], 100 * rms, 100 * max, t.inter.bandwidth / 1e9, t.inter.latency * 1e6,
        t.intra.bandwidth / 1e9, t.intra.latency * 1e6, #warnings > 0 and " (" .. warnings[1] .. ")" or ""))
end

-- 3. bad logs: one line naming the file, line and what is wrong
local HDR = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
local ROW = "     1048576        262144     float     sum      -1    85.58   12.25   22.97      0    84.50   12.41   23.27      0\n"
local RANKS = "#  Rank  0 Group  0 Pid     43 on nodeA device  0 [0x0f] NVIDIA A100-SXM4-40GB\n"
    .. "#  Rank  1 Group  0 Pid     44 on nodeA device  1 [0x15] NVIDIA A100-SXM4-40GB\n"
local function log_err(text, extra)
    local opts = { logs = { { name = "bad.log", text = text } } }
    for k, v in pairs(extra or {}) do opts[k] = v end
    return err_of(opts)
end
H.eq(log_err("hello\n"), "calibrate: bad.log: no nccl-tests table (a '# size count type ... time "
    .. "algbw busbw' header and its rows)")
H.eq(log_err(ROW), "calibrate: bad.log:1: a result row before nccl-tests' column header "
    .. "(# size count type ...)")
H.eq(log_err(RANKS .. HDR .. "     1048576        262144     float     sum      -1    85.58\n"),
    "calibrate: bad.log:4: expected 13 columns as the header has (size count type redop root time "
    .. "algbw busbw #wrong time algbw busbw #wrong), got 6")
H.eq(log_err(RANKS .. HDR .. ROW:gsub("85.58", "-1.00")), "calibrate: bad.log:4: time '-1.00' "
    .. "(column 6) is not a positive number of microseconds")
H.eq(log_err(HDR .. ROW), "calibrate: bad.log:1: the log has no '# Rank N ... on HOST' lines: give "
    .. "the ranks and nodes it ran on (--ranks N --nodes N)")
H.eq(log_err(HDR .. ROW, { ranks = 3, nodes = 2 }), "calibrate: bad.log:1: 3 ranks do not split "
    .. "evenly over 2 nodes")
H.eq(log_err(RANKS .. HDR:gsub("redop    root", "redop    root") .. ROW:gsub(" sum ", "none"),
    { ranks = 2 }), "calibrate: bad.log:3: cannot tell which collective this table measures: the "
    .. "log names no *_perf binary before it and its columns fit several; give --op")
H.eq(log_err("./build/gather_perf -b 8\n" .. RANKS .. HDR .. ROW), "calibrate: bad.log:1: "
    .. "gather_perf: pipesim simulates all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
    .. "alltoall and sendrecv")
H.eq(log_err(RANKS .. HDR .. "# Out of bounds values : 0 OK\n"), "calibrate: bad.log:3: a column "
    .. "header with no rows under it")
H.eq(log_err(RANKS .. HDR .. ROW, { op = "all_to_all" }), "calibrate: bad.log:3: unknown op "
    .. "'all_to_all' (expected all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, "
    .. "sendrecv)")
H.eq(log_err(read(LOGS .. "v100_dgx2_12gpu.log"), { cluster = "h100" }), "calibrate: 12 ranks on 1 "
    .. "nodes are 12 per node, more than the cluster's 8 GPUs per node")
H.eq(log_err(read(LOGS .. "h100_2x8_ib_noranks.log"), { ranks = 16, nodes = 2 }), "calibrate: no "
    .. "single-node measurement and no base cluster: the intra-node tier is unknown (give a "
    .. "single-node log, or --cluster PRESET)")
H.eq(log_err(RANKS .. HDR .. ROW, { cluster = "h999" }), "calibrate: --cluster h999: dgx: unknown "
    .. "device 'h999' (known: A100, A100 40GB, H100, H200, H800, B200, GB200, GB300)")
-- launcher prefixes and interleaved NCCL INFO lines are read through
do
    local text = "[1,0]<stdout>:./build/all_reduce_perf -b 8\n"
        .. RANKS:gsub("#", "[1,0]<stdout>:#")
        .. "[1,0]<stdout>:" .. HDR
        .. "nodeA:43:43 [0] NCCL INFO Launch mode Parallel\n"
        .. "[1,0]<stdout>:" .. ROW
    local runs = P.parse(text, "prefixed.log")
    H.eq({ runs[1].op, runs[1].ranks, runs[1].nodes, #runs[1].rows },
        { "all_reduce", 2, 1, 1 }, "mpirun --tag-output prefixes")
    H.near(runs[1].rows[1].oop, 85.58e-6, 1e-12, "microseconds to seconds")
    local older = P.parse(read(LOGS .. "v100_dgx2_12gpu.log"), "dgx2")
    H.eq({ older[1].op, older[2].op, older[3].op, older[1].layout, #older[1].rows, older[1].ranks },
        { "all_gather", "all_reduce", "broadcast", "older", 31, 12 }, "older layouts, three ops")
end

-- GEMM CSVs
local function gemm_err(csv, cluster)
    return err_of { gemms = { { name = "g.csv", text = csv } }, cluster = cluster or "h100" }
end
H.eq(gemm_err("m,n,k,dtype,time\n"), "calibrate: g.csv:1: unknown column 'time' (expected m, n, k, "
    .. "dtype, seconds)")
H.eq(gemm_err("m,n,k,seconds\n"), "calibrate: g.csv:1: the header has no column 'dtype'")
H.eq(gemm_err("m,n,k,dtype,seconds\n1024,0,1024,bf16,1e-3\n"), "calibrate: g.csv:2: n '0' is not "
    .. "an integer from 1 to 2^31")
H.eq(gemm_err("m,n,k,dtype,seconds\n1024,1024,1024,bf16,-1\n"), "calibrate: g.csv:2: seconds '-1' "
    .. "is not a positive time")
H.eq(gemm_err("m,n,k,dtype,seconds\n1024,1024,1024,fp8,1e-3\n"), "calibrate: g.csv:2: dtype 'fp8': "
    .. "the roofline's GEMM constants are for bf16 and fp16 (dense BF16/FP16 peak)")
H.eq(gemm_err("m,n,k,dtype,seconds\n1024,1024,bf16,1e-3\n"), "calibrate: g.csv:2: 4 fields, the "
    .. "header has 5")
H.eq(gemm_err("m,n,k,dtype,seconds\n"), "calibrate: g.csv: no GEMM rows (a header m,n,k,dtype,seconds "
    .. "and one row per GEMM)")
H.eq(gemm_err("m,n,k,dtype,seconds\n8192,8192,8192,bf16,1.0017e-3\n4096,4096,4096,bf16,1.2518e-4\n"),
    "calibrate: the GEMMs run at 1.11 of the device's dense peak (989 TFLOP/s): more than the "
    .. "peak; is the device or the dtype right?")
H.eq(gemm_err("m,n,k,dtype,seconds\n8192,8192,8192,bf16,1e-3\n"), "calibrate: fewer than 2 GEMMs "
    .. "are compute-bound: give larger shapes")
H.eq(err_of { gemms = { { name = "g.csv", text = "m,n,k,dtype,seconds\n8,8,8,bf16,1e-3\n" } } },
    "calibrate: GEMM times need the device's peak: give --cluster PRESET (or logs naming a known GPU)")

-- ps.clusters.load: the written file, as data
do
    local f = LOGS .. "h100_2x8_ib_noranks.log"
    local text = C.cli(ps, { logs = { { name = f, text = read(f) } }, ranks = 16, nodes = 2,
                             cluster = "h100" })
    H.check(text:match("^%-%- pipesim calibrate") ~= nil, "the header comes first")
    H.check(text:find("\nreturn {\n", 1, true) ~= nil, "then a table")
    H.eq(select(2, pcall(ps.clusters.load, 42)), "load: expected the path of a cluster file, got number")
end

H.done()
