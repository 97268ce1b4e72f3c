-- ps.nccl_tests: nccl-tests' size sweep on a simulated cluster, printed in
-- nccl-tests' table layout (src/util.cu writeResultHeader and
-- writeBenchmarkLine*, NVIDIA/nccl-tests a0b82b2) so that its output can
-- be set beside a real all_reduce_perf run. Every size is one recorded
-- ps.collective run; out-of-place and in-place are the same simulation.
local M = {}

-- nccl-tests' binary names and pipesim's ops: the reduction ops print
-- redop "sum", the others "none"; rooted ones root 0, the others -1
local OPS = {
    all_reduce = "allreduce", allreduce = "allreduce",
    reduce_scatter = "reduce_scatter",
    all_gather = "allgather", allgather = "allgather",
    broadcast = "broadcast", reduce = "reduce",
    alltoall = "alltoall", sendrecv = "sendrecv",
}
local REDUCES = { allreduce = true, reduce_scatter = true, reduce = true }
local ROOTED = { broadcast = true, reduce = true }

-- nccl-tests' parsesize: a count with an optional K, M or G (powers of
-- 1024, either case). Returns the bytes, or nil.
function M.parse_size(s)
    local num, suffix = tostring(s):match("^(%d+)([KkMmGg]?)$")
    if not num then return nil end
    local mult = ({ k = 1024, m = 1024 ^ 2, g = 1024 ^ 3 })[suffix:lower()] or 1
    return math.tointeger(tonumber(num) * mult)
end

-- nccl-tests' getFloatStr: %*.2f, or fewer decimals, or %e, to fit width.
local function float_str(v, width)
    for _, f in ipairs{ "%" .. width .. ".2f", "%" .. width .. ".1f", "%" .. width .. ".0f" } do
        local s = string.format(f, v)
        if #s <= width then return s end
    end
    return string.format(width >= 7 and "%" .. width .. ".1e" or "%" .. width .. ".0e", v)
end
M.float_str = float_str

-- The sizes nccl-tests runs from minbytes to maxbytes (src/common.cu,
-- the loop over sizes): times the factor f when f > 1 (-f), else plus
-- stepbytes i (-i; nccl-tests' defaults are stepFactor 1, stepBytes 1M).
function M.sizes(b, e, f, i)
    local out, s = {}, b
    while s <= e do
        out[#out + 1] = s
        if f > 1 and s == 0 then break end -- -b 0 -e 0: the one size
        if f > 1 then s = s * f else s = s + i end
    end
    return out
end

-- At most this many sizes in one table: -i 1 from 8 B to 8G would be 8.6e9
-- simulations, a run that looks hung rather than one that fails.
M.MAX_SIZES = 100000

-- The count of float elements nccl-tests moves for size bytes on n ranks:
-- reduce_scatter, allgather and alltoall round the per-rank count down to
-- a multiple of 16 bytes (4 floats) first (src/*.cu GetCollByteCount).
local function count_of(op, size, n)
    local count = size // 4
    if op == "reduce_scatter" or op == "allgather" or op == "alltoall" then
        count = ((count // n) & ~3) * n
    end
    return count
end

-- spec: { op = "all_reduce", cluster = ps.cluster, b = 8, e = "8G",
-- f = factor (default 1: off) or i = stepbytes (default 1M), g = ranks (default all), algorithm, slots,
-- print = false to stay quiet or a function(text) that gets the output,
-- db, record (default "summary") }. Returns the rows { size,
-- count, time, algbw, busbw, algorithm, id }. Errors name the flag.
function M.run(ps, spec, where)
    where = where or "ps.nccl_tests"
    if type(spec) ~= "table" then error(where .. ": expected a table", 3) end
    local op = OPS[spec.op]
    if not op then
        error(string.format("%s: unknown op '%s' (expected all_reduce, all_gather, "
            .. "reduce_scatter, broadcast, reduce, alltoall, sendrecv)", where,
            tostring(spec.op)), 3)
    end
    local function size_flag(flag, v, default)
        if v == nil then return default end
        local s = M.parse_size(v)
        if not s then
            error(string.format("%s: -%s: expected a size such as 8, 64K or 8G, got '%s'",
                where, flag, tostring(v)), 4)
        end
        return s
    end
    local b = size_flag("b", spec.b, 32 * 1024 * 1024)
    local e = size_flag("e", spec.e, 32 * 1024 * 1024)
    if b > e then
        error(string.format("%s: -b %d is larger than -e %d", where, b, e), 3)
    end
    -- nccl-tests: -f (stepFactor, default 1) wins when above 1, else -i
    -- (stepBytes, default 1M) is added
    local f = spec.f == nil and 1 or spec.f
    if math.type(f) ~= "integer" or f < 1 then
        error(string.format("%s: -f: expected an integer factor >= 1, got '%s'",
            where, tostring(spec.f)), 3)
    end
    local i = size_flag("i", spec.i, 1024 * 1024)
    if f == 1 and i < 1 then error(where .. ": -i: the step must be positive", 3) end
    if f > 1 and b == 0 and e > 0 then
        error(string.format("%s: -b 0 with -f %d never grows: start at -b 1 or more, "
            .. "or step with -i", where, f), 3)
    end
    local n = f == 1 and (e - b) // i + 1 or 0 -- a factor of 2 or more: <= 64 sizes
    if n > M.MAX_SIZES then
        error(string.format("%s: -b %d -e %d -i %d gives %d sizes, at most %d: take a "
            .. "larger -i, or -f 2", where, b, e, i, n, M.MAX_SIZES), 3)
    end
    local c = spec.cluster
    local total = c and c.ranks
    if type(total) ~= "number" then error(where .. ": missing field 'cluster' (a ps.cluster)", 3) end
    local g = spec.g == nil and total or spec.g
    if math.type(g) ~= "integer" or g < 1 or g > total then
        error(string.format("%s: -g: expected 1 to %d GPUs, got '%s'", where, total,
            tostring(spec.g)), 3)
    end
    local ranks = {}
    for r = 0, g - 1 do ranks[r + 1] = r end
    local sink = spec.print
    if sink ~= nil and sink ~= false and type(sink) ~= "function" then
        error(where .. ": field 'print' must be false or a function(text)", 3)
    end
    local out = {}
    local function P(...)
        if sink == nil then io.write(string.format(...))
        elseif sink then sink(string.format(...)) end
    end
    P("# nccl-tests layout, simulated by pipesim: %s_perf on %s, %d ranks\n",
        spec.op, c.name or "cluster", g)
    P("#\n")
    P("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
        "", "", "", "", "")
    P("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "size", "count",
        "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong")
    P("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "(B)",
        "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
    local sum_bus, nrows = 0, 0
    for _, size in ipairs(M.sizes(b, e, f, i)) do
        local count = count_of(op, size, g)
        local r = ps.collective{
            cluster = c, op = op, bytes = 4 * count, ranks = ranks,
            algorithm = spec.algorithm, slots = spec.slots, db = spec.db,
            -- nil: ps.collective's one rule (coll_default_protocol): NCCL's
            -- (algorithm, protocol) pair on a cluster with NCCL's constants
            protocol = spec.protocol,
            record = spec.record or "summary",
            name = string.format("nccl-tests %s %d B", spec.op, 4 * count),
        }
        local us, alg, bus = r.time * 1e6, r.algbw / 1e9, r.busbw / 1e9
        local body = string.format("  %7s  %6s  %6s    N/A", float_str(us, 7),
            float_str(alg, 6), float_str(bus, 6))
        P("%12d  %12d  %8s  %6s  %6s%s%s\n", 4 * count, count, "float",
            REDUCES[op] and "sum" or "none", string.format("%6d", ROOTED[op] and 0 or -1),
            body, body)
        out[#out + 1] = { size = 4 * count, count = count, time = r.time,
                            algbw = r.algbw, busbw = r.busbw, algorithm = r.algorithm,
                            protocol = r.protocol, id = r.id }
        sum_bus, nrows = sum_bus + bus, nrows + 1
    end
    P("# Out of bounds values : 0 OK\n")
    P("# Avg bus bandwidth    : %g \n", nrows > 0 and sum_bus / nrows or 0)
    P("#\n")
    return out
end

-- `pipesim nccl-tests` (core/bind/nccl_tests.c): opts holds the flags as
-- typed (strings) and cluster, a preset "h100" or "h100:4" (DGX nodes) or
-- the value a cluster file returned (a ps.cluster or a table for one).
-- Errors are one line naming the flag.
function M.cli(ps, opts)
    local function fail(msg) error("nccl-tests: " .. msg, 0) end
    local c = opts.cluster
    if type(c) == "string" then
        local name, nodes = c:match("^([^:]+):?(%d*)$")
        if not name then fail("--cluster " .. c .. ": expected PRESET or PRESET:NODES, such as h100:4") end
        local ok, t = pcall(ps.clusters.dgx, name, nodes ~= "" and tonumber(nodes) or 1)
        if not ok then
            fail("--cluster " .. c .. ": " .. tostring(t):gsub("^.-:%d+: ", ""):gsub("^ps%.clusters%.", ""))
        end
        c = ps.cluster(t)
    elseif type(c) == "table" then
        c = ps.cluster(c)
    elseif type(c) ~= "userdata" then
        fail(string.format("--cluster %s: the file must return a cluster (ps.cluster{...} "
            .. "or a table for one), got %s", opts.cluster_name or "?", type(c)))
    end
    local function int_flag(flag, v)
        if v == nil then return nil end
        local n = math.tointeger(tonumber(v))
        if not n then fail(string.format("-%s %s: expected a whole number", flag, v)) end
        return n
    end
    local g, t = int_flag("g", opts.g), int_flag("t", opts.t)
    if t and t < 1 then fail("-t " .. opts.t .. ": expected at least 1 thread") end
    if g and t then g = g * t end -- nccl-tests: nThreads x nGpus ranks
    local spec = { op = opts.op, cluster = c, b = opts.b, e = opts.e, f = int_flag("f", opts.f),
                     i = opts.i, g = g, algorithm = opts.algorithm, protocol = opts.protocol,
                     db = opts.db }
    if opts.f and spec.f == nil then fail("-f " .. opts.f .. ": expected an integer factor >= 1") end
    local ok, err = pcall(M.run, ps, spec, "nccl-tests")
    if not ok then error((tostring(err):gsub("^.-:%d+: ", "")), 0) end
end

return M
