-- pipesim calibrate (issue 27 item 17): fits a cluster's per-tier link
-- constants to measured collectives (nccl-tests logs, read by
-- lua/pipesim/nccl_log.lua) and a device's GEMM constants to measured GEMM
-- times, and writes a cluster file that ps.clusters.load reads and
-- ps.cluster takes. The file reproduces the measurements within the error
-- it states: every error is pipesim's own simulation of the written file
-- against the measured time, size by size.
--
-- The fit (docs/calibrate.md): for each tier, the intra-node (NVLink) tier
-- from single-node measurements and then the inter-node (NIC) tier from
-- multi-node ones with the intra tier fixed, a bandwidth and a latency
-- minimise the mean squared log ratio of simulated to measured time,
-- ln(t_sim / t_meas)^2, over every point of the tier: Nelder-Mead in
-- (ln bandwidth, ln latency), first on pipesim's cost model (simulate =
-- false, milliseconds), then on that model corrected point by point
-- toward the simulated collectives, and a last look around on the
-- simulation itself. On a
-- cluster with NCCL's constants (a DGX preset) every collective runs with
-- NCCL's (algorithm, protocol) choice, as the real run did
-- (coll_default_protocol); on textbook links without a protocol. GEMMs:
-- time = FLOPs / (peak x gemm_max) + gemm_overhead (the roofline's compute
-- roof, models/roofline.lua), a weighted least squares in closed form on
-- the rows that are not memory-bound.
--
-- calibrate(ps, spec) takes measured points from any source (`pipesim
-- calibrate` reads them from files; a live measurement may hand its own).
local nccl_log = require "pipesim.nccl_log"

local M = {}

local function fail(fmt, ...) error("calibrate: " .. string.format(fmt, ...), 0) end

-- GPU names as nccl-tests prints them (nvidia-smi's) -> ps.clusters' DGX
-- presets: the SXM parts of DGX-class nodes only (a PCIe A100 has neither
-- their NVLink nor their NICs).
local GPUS = {
    { "A100%-SXM4%-40GB", "a100_40" }, { "A100%-SXM4%-80GB", "a100" },
    { "H100 80GB HBM3", "h100" }, { "H100 SXM", "h100" }, { "H200", "h200" }, { "B200", "b200" },
}

-- CUDA compute capabilities (x 10) of GPUs without a preset, so that a
-- textbook base still runs NCCL's protocols for the generation the log's
-- NCCL ran on (core/coll/proto.c reads the generation's caps from it).
local CAPABILITY = {
    { "V100", 70 }, { "T4", 75 }, { "A100", 80 }, { "A30", 80 }, { "A10", 86 }, { "A40", 86 },
    { "L40", 89 }, { "L4", 89 }, { "H100", 90 }, { "H800", 90 }, { "H200", 90 }, { "H20", 90 },
    { "B200", 100 }, { "B100", 100 },
}

-- The compute capability of a GPU name, or nil.
function M.capability_of(gpu)
    if type(gpu) ~= "string" then return nil end
    for _, g in ipairs(CAPABILITY) do
        if gpu:find(g[1], 1, true) then return g[2] end
    end
    return nil
end

-- The preset of a GPU name, or nil.
function M.preset_of(gpu)
    if type(gpu) ~= "string" then return nil end
    for _, g in ipairs(GPUS) do
        if gpu:find(g[1]) then return g[2] end
    end
    return nil
end

-- ------------------------------------------------------------------ --
-- Measured points                                                     --
-- ------------------------------------------------------------------ --

-- Points of the runs nccl_log.parse read: { op (pipesim's), nccl_op,
-- ranks, nodes, bytes, time (seconds), where }, one per size > 0, the
-- out-of-place time (in_place: the in-place one).
function M.points_of(runs, in_place)
    local pts = {}
    for _, r in ipairs(runs) do
        if in_place and not r.in_place then
            fail("%s: the table has no in-place column", r.where)
        end
        for _, row in ipairs(r.rows) do
            local bytes = row.size - row.size % 4 -- whole float32 elements
            if bytes > 0 then
                pts[#pts + 1] = { op = nccl_log.OPS[r.op], nccl_op = r.op, ranks = r.ranks,
                                  nodes = r.nodes, bytes = bytes,
                                  time = in_place and row.ip or row.oop,
                                  where = r.where:gsub(":%d+$", "") .. ":" .. row.line }
            end
        end
    end
    return pts
end

-- Points grouped by (op, ranks, nodes), in first-seen order.
local function groups_of(points)
    local out, index = {}, {}
    for _, p in ipairs(points) do
        local key = p.op .. "/" .. p.ranks .. "/" .. p.nodes
        local g = index[key]
        if not g then
            g = { op = p.op, nccl_op = p.nccl_op or p.op, ranks = p.ranks, nodes = p.nodes, points = {} }
            index[key] = g
            out[#out + 1] = g
        end
        g.points[#g.points + 1] = p
    end
    return out
end

-- ------------------------------------------------------------------ --
-- Simulation of the points on a candidate cluster                     --
-- ------------------------------------------------------------------ --

-- The cluster ranks of a group: the first ranks/nodes GPUs of each of its
-- nodes, as an mpirun of ranks/nodes processes per node places them.
local function rank_list(g, per_node)
    local per = g.ranks // g.nodes
    if per > per_node then
        fail("%d ranks on %d nodes are %d per node, more than the cluster's %d GPUs per node",
            g.ranks, g.nodes, per, per_node)
    end
    local list = {}
    for n = 0, g.nodes - 1 do
        for k = 0, per - 1 do list[#list + 1] = n * per_node + k end
    end
    return list
end

local function copy(t)
    local c = {}
    for k, v in pairs(t) do c[k] = type(v) == "table" and copy(v) or v end
    return c
end

-- base with its tiers set to p = { intra = { bandwidth, latency }, inter =
-- ... } (a fresh table)
local function with_links(base, p)
    local t = copy(base)
    t.intra = { bandwidth = p.intra.bandwidth, latency = p.intra.latency }
    t.inter = { bandwidth = p.inter.bandwidth, latency = p.inter.latency }
    return t
end

-- Times of every point of groups on cluster table t: simulated, or the
-- cost model's prediction (simulate == false).
local function times(ps, t, groups, simulate)
    local c = ps.cluster(t)
    local out = {}
    for gi, g in ipairs(groups) do
        local ranks = rank_list(g, t.gpus_per_node)
        local row = {}
        for i, p in ipairs(g.points) do
            local spec = { cluster = c, op = g.op, bytes = p.bytes, ranks = ranks, record = "none" }
            if not simulate then spec.simulate = false end
            local r = ps.collective(spec)
            if simulate then row[i] = r.time else row[i] = r.predicted end
        end
        out[gi] = row
    end
    return out
end

-- Mean squared log ratio of model to measured time over the groups.
local function loss(groups, model)
    local s, n = 0, 0
    for gi, g in ipairs(groups) do
        for i, p in ipairs(g.points) do
            local m = model[gi][i]
            if not (m > 0) then return math.huge end
            local d = math.log(m / p.time)
            s, n = s + d * d, n + 1
        end
    end
    return s / n
end

-- ------------------------------------------------------------------ --
-- Nelder-Mead                                                         --
-- ------------------------------------------------------------------ --

-- Minimises f over R^n from x0 with initial steps `step`; at most `evals`
-- calls. Returns the best point and its value. (Nelder and Mead 1965,
-- with the standard coefficients 1, 2, 0.5, 0.5.)
function M.nelder_mead(f, x0, step, evals)
    local n = #x0
    local simplex = { { x = x0, f = f(x0) } }
    for i = 1, n do
        local x = {}
        for j = 1, n do x[j] = x0[j] + (i == j and step[j] or 0) end
        simplex[#simplex + 1] = { x = x, f = f(x) }
    end
    local used = n + 1
    local function at(a, b, w) -- a + w (a - b)
        local x = {}
        for j = 1, n do x[j] = a[j] + w * (a[j] - b[j]) end
        return x
    end
    while used < evals do
        table.sort(simplex, function(a, b) return a.f < b.f end)
        local best, worst = simplex[1], simplex[n + 1]
        local spread = 0
        for i = 2, n + 1 do
            for j = 1, n do spread = math.max(spread, math.abs(simplex[i].x[j] - best.x[j])) end
        end
        -- 1e-5 in ln: constants to 0.001%, far below any measurement's
        if spread < 1e-5 or worst.f - best.f < 1e-12 * math.max(best.f, 1e-12) then break end
        local c = {}
        for j = 1, n do
            local s = 0
            for i = 1, n do s = s + simplex[i].x[j] end
            c[j] = s / n
        end
        local xr = at(c, worst.x, 1)
        local fr = f(xr); used = used + 1
        if fr < best.f then
            local xe = at(c, worst.x, 2)
            local fe = f(xe); used = used + 1
            simplex[n + 1] = fe < fr and { x = xe, f = fe } or { x = xr, f = fr }
        elseif fr < simplex[n].f then
            simplex[n + 1] = { x = xr, f = fr }
        else
            local xc = fr < worst.f and at(c, worst.x, 0.5) or at(c, worst.x, -0.5)
            local fc = f(xc); used = used + 1
            if fc < math.min(fr, worst.f) then
                simplex[n + 1] = { x = xc, f = fc }
            else
                for i = 2, n + 1 do
                    local x = {}
                    for j = 1, n do x[j] = best.x[j] + 0.5 * (simplex[i].x[j] - best.x[j]) end
                    simplex[i] = { x = x, f = f(x) }
                    used = used + 1
                end
            end
        end
    end
    table.sort(simplex, function(a, b) return a.f < b.f end)
    return simplex[1].x, simplex[1].f
end

-- ------------------------------------------------------------------ --
-- The link fit                                                        --
-- ------------------------------------------------------------------ --

-- Bandwidths and latencies the fit may take (bytes/s, seconds).
local BW_MIN, BW_MAX, LAT_MIN, LAT_MAX = 1e6, 1e15, 1e-9, 1

-- Fits tier ("intra" or "inter") of params on groups, the other tier
-- fixed. Returns { bandwidth, latency, free = { latency = true } for a
-- constant the points cannot see: halving or doubling it moves no
-- simulated time by 0.1% (a latency under large sizes only), so it is
-- left at its start value }.
local function fit_tier(ps, base, params, tier, groups)
    local p0 = params[tier]
    local function model(x, simulate)
        local bw, lat = math.exp(x[1]), math.exp(x[2])
        if bw < BW_MIN or bw > BW_MAX or lat < LAT_MIN or lat > LAT_MAX then return nil end
        local p = copy(params)
        p[tier] = { bandwidth = bw, latency = lat }
        local ok, m = pcall(times, ps, with_links(base, p), groups, simulate)
        return ok and m or nil
    end
    -- the cost model's prediction, times the ratio simulated / predicted
    -- of each point at the last check (nil: 1): fast, and as the checks
    -- converge, the simulated loss
    local function f_of(ratio)
        return function(x)
            local m = model(x, false)
            if not m then return math.huge end
            if ratio then
                for gi, row in ipairs(m) do
                    for i in ipairs(row) do row[i] = row[i] * ratio[gi][i] end
                end
            end
            return loss(groups, m)
        end
    end
    local function simulated(x)
        local m = model(x, true)
        return m and loss(groups, m) or math.huge, m
    end
    local x0 = { math.log(p0.bandwidth), math.log(p0.latency) }
    local x = M.nelder_mead(f_of(nil), x0, { math.log(4), math.log(4) }, 120)
    -- defect correction: the simulation differs from the cost model (the
    -- tree's pipeline, the links' sharing) by a ratio per point that moves
    -- slowly with the constants; refit on the corrected model until the
    -- simulated loss stops improving
    local bestf, sim = simulated(x)
    local best = x
    for _ = 1, 3 do
        local pred = model(x, false)
        if not sim or not pred then break end
        local ratio = {}
        for gi, row in ipairs(sim) do
            ratio[gi] = {}
            for i, v in ipairs(row) do ratio[gi][i] = v / pred[gi][i] end
        end
        x = M.nelder_mead(f_of(ratio), x, { math.log(1.5), math.log(1.5) }, 50)
        local fx
        fx, sim = simulated(x)
        if fx >= bestf * (1 - 1e-6) then break end
        best, bestf = x, fx
    end
    -- and a last look around on the simulation itself (auto's choice
    -- makes the loss piecewise where the two still differ)
    x = M.nelder_mead(simulated, best, { math.log(1.05), math.log(1.05) }, 12)
    local free = {}
    local at = model(x, true)
    for j, name in ipairs { "bandwidth", "latency" } do
        local moved = 0
        for _, w in ipairs { math.log(2), -math.log(2) } do
            local y = { x[1], x[2] }
            y[j] = y[j] + w
            local m = model(y, true) -- nil past a bound: that side is not looked at
            for gi, row in ipairs(m or {}) do
                for i, v in ipairs(row) do moved = math.max(moved, math.abs(v / at[gi][i] - 1)) end
            end
        end
        if moved < 1e-3 then x[j], free[name] = x0[j], true end
    end
    return { bandwidth = math.exp(x[1]), latency = math.exp(x[2]), free = free }
end

-- A starting point for a tier from its groups when the base has none:
-- the largest bus bandwidth measured, and the smallest time over the
-- steps of a ring.
local function start_of(groups)
    local bw, lat = 0, math.huge
    for _, g in ipairs(groups) do
        for _, p in ipairs(g.points) do
            bw = math.max(bw, p.bytes / p.time)
            lat = math.min(lat, p.time / (2 * math.max(g.ranks - 1, 1)))
        end
    end
    return { bandwidth = math.max(bw, BW_MIN), latency = math.min(math.max(lat, LAT_MIN), 1e-3) }
end
M.start_of = start_of

-- ------------------------------------------------------------------ --
-- GEMMs                                                               --
-- ------------------------------------------------------------------ --

-- Bytes per element of the GEMM dtypes the roofline costs.
local GEMM_BYTES = { bf16 = 2, fp16 = 2 }

-- parse_gemm(text, name) -> rows { m, n, k, dtype, seconds, where } from a
-- CSV with a header naming the columns m, n, k, dtype, seconds (any order).
function M.parse_gemm(text, name)
    local rows, cols, lineno = {}, nil, 0
    for line in (text .. "\n"):gmatch("([^\n]*)\n") do
        lineno = lineno + 1
        line = line:gsub("\r$", "")
        local where = name .. ":" .. lineno
        local blank = line:match("^%s*$") or line:match("^%s*#")
        if blank then
            goto next
        end
        if not cols then
            cols = {}
            local i = 0
            for field in (line .. ","):gmatch("([^,]*),") do
                i = i + 1
                field = field:match("^%s*(.-)%s*$")
                if not ({ m = 1, n = 1, k = 1, dtype = 1, seconds = 1 })[field] then
                    fail("%s: unknown column '%s' (expected m, n, k, dtype, seconds)", where, field)
                end
                if cols[field] then fail("%s: column '%s' twice", where, field) end
                cols[field] = i
            end
            for _, k in ipairs { "m", "n", "k", "dtype", "seconds" } do
                if not cols[k] then fail("%s: the header has no column '%s'", where, k) end
            end
            cols.n_ = i
        else
            local f = {}
            for field in (line .. ","):gmatch("([^,]*),") do f[#f + 1] = field:match("^%s*(.-)%s*$") end
            if #f ~= cols.n_ then fail("%s: %d fields, the header has %d", where, #f, cols.n_) end
            local r = { dtype = f[cols.dtype], where = where }
            for _, k in ipairs { "m", "n", "k" } do
                r[k] = math.tointeger(tonumber(f[cols[k]]))
                if not r[k] or r[k] < 1 or r[k] > 1 << 31 then
                    fail("%s: %s '%s' is not an integer from 1 to 2^31", where, k, f[cols[k]])
                end
            end
            r.seconds = tonumber(f[cols.seconds])
            if not r.seconds or not (r.seconds > 0) or r.seconds == math.huge then
                fail("%s: seconds '%s' is not a positive time", where, f[cols.seconds])
            end
            if not GEMM_BYTES[r.dtype] then
                fail("%s: dtype '%s': the roofline's GEMM constants are for bf16 and fp16 "
                    .. "(dense BF16/FP16 peak)", where, r.dtype)
            end
            rows[#rows + 1] = r
        end
        ::next::
    end
    if #rows == 0 then fail("%s: no GEMM rows (a header m,n,k,dtype,seconds and one row per GEMM)", name) end
    return rows
end

-- fit_gemm(dev, rows) -> gemm_max, gemm_overhead and the rows it used:
-- t = F a + b with a = 1 / (peak gemm_max), b = gemm_overhead, minimising
-- the squared relative error sum ((F a + b) / t - 1)^2 in closed form,
-- over the rows whose memory roof stays under that line (repeated until
-- the set is stable); b >= 0.
function M.fit_gemm(dev, rows)
    local peak = dev.flops
    local hbm = (dev.hbm_bandwidth or math.huge) * (dev.mem_efficiency or 1)
    local used = {}
    for i = 1, #rows do used[i] = true end
    local a, b
    for _ = 1, 20 do
        local sxx, sxy, syy, sx, sy, n = 0, 0, 0, 0, 0, 0
        for i, r in ipairs(rows) do
            if used[i] then
                local x, y = 2.0 * r.m * r.n * r.k / r.seconds, 1 / r.seconds
                sxx, sxy, syy, sx, sy, n = sxx + x * x, sxy + x * y, syy + y * y, sx + x, sy + y, n + 1
            end
        end
        if n < 2 then fail("fewer than 2 GEMMs are compute-bound: give larger shapes") end
        local det = sxx * syy - sxy * sxy
        a, b = (sx * syy - sy * sxy) / det, (sxx * sy - sxy * sx) / det
        if not (b >= 0) or det <= 0 then a, b = sx / sxx, 0 end
        local changed = false
        for i, r in ipairs(rows) do
            local mem = GEMM_BYTES[r.dtype] * (1.0 * r.m * r.k + 1.0 * r.k * r.n + 1.0 * r.m * r.n) / hbm
            local keep = 2.0 * r.m * r.n * r.k * a + b >= mem
            if keep ~= used[i] then used[i], changed = keep, true end
        end
        if not changed then break end
    end
    local gemm_max = 1 / (a * peak)
    if not (gemm_max > 0) or gemm_max > 1 then
        fail("the GEMMs run at %.3g of the device's dense peak (%.4g TFLOP/s): more than the "
            .. "peak; is the device or the dtype right?", gemm_max, peak / 1e12)
    end
    return gemm_max, b, used
end

-- ------------------------------------------------------------------ --
-- The cluster file                                                    --
-- ------------------------------------------------------------------ --

-- A Lua literal of v: numbers with 17 significant digits (they read back
-- exactly), keys sorted, nested tables indented.
local function literal(v, indent)
    if type(v) == "number" then
        if math.type(v) == "integer" then return tostring(v) end
        return string.format("%.17g", v)
    elseif type(v) == "string" then
        return string.format("%q", v)
    elseif type(v) == "boolean" then
        return tostring(v)
    elseif type(v) == "table" then
        local keys = {}
        for k in pairs(v) do keys[#keys + 1] = k end
        -- list entries (a links table's endpoints) first, in order
        table.sort(keys, function(a, b)
            if type(a) ~= type(b) then return type(a) == "number" end
            return a < b
        end)
        local pad = indent .. "    "
        local out = { "{\n" }
        for _, k in ipairs(keys) do
            local key = type(k) == "string" and k:match("^[%a_][%w_]*$") and k
                or "[" .. literal(k, pad) .. "]"
            out[#out + 1] = string.format("%s%s = %s,\n", pad, key, literal(v[k], pad))
        end
        out[#out + 1] = indent .. "}"
        return table.concat(out)
    end
    fail("cannot write a %s into a cluster file", type(v))
end

-- The file's text: header lines (each prefixed "-- ") and the table.
function M.render(header, t)
    local out = {}
    for _, line in ipairs(header) do out[#out + 1] = ("-- " .. line):gsub("%s+$", "") .. "\n" end
    out[#out + 1] = "return " .. literal(t, "") .. "\n"
    return table.concat(out)
end

-- ------------------------------------------------------------------ --
-- Calibration: fit, check, write                                      --
-- ------------------------------------------------------------------ --

local function human_bytes(b)
    local units, i = { "B", "KiB", "MiB", "GiB", "TiB" }, 1
    while b >= 1024 and i < #units and b % 1024 == 0 do b, i = b / 1024, i + 1 end
    return string.format("%d %s", b, units[i])
end

local function pct(x) return string.format("%+.1f%%", 100 * x) end

-- The error lines of the groups: per size, then per group and overall
-- RMS and max |error|. Returns the lines and the overall figures.
local function error_lines(groups, sims)
    local lines, all2, alln, allmax = {}, 0, 0, 0
    for gi, g in ipairs(groups) do
        lines[#lines + 1] = string.format("  %s on %d ranks, %d node%s:", g.nccl_op, g.ranks, g.nodes,
            g.nodes > 1 and "s" or "")
        lines[#lines + 1] = string.format("  %14s  %13s  %13s  %8s", "size (B)", "measured us",
            "simulated us", "error")
        local s2, worst, at = 0, 0, 0
        for i, p in ipairs(g.points) do
            local e = sims[gi][i] / p.time - 1
            lines[#lines + 1] = string.format("  %14d  %13.3f  %13.3f  %8s", p.bytes, p.time * 1e6,
                sims[gi][i] * 1e6, pct(e))
            s2 = s2 + e * e
            if math.abs(e) > worst then worst, at = math.abs(e), p.bytes end
        end
        lines[#lines + 1] = string.format("  %s: RMS %.1f%%, max %.1f%% at %s", g.nccl_op,
            100 * math.sqrt(s2 / #g.points), 100 * worst, human_bytes(at))
        all2, alln, allmax = all2 + s2, alln + #g.points, math.max(allmax, worst)
    end
    return lines, math.sqrt(all2 / math.max(alln, 1)), allmax
end

-- Fits the tiers the points measure (intra from single-node groups, then
-- inter from multi-node ones), starting from base's links. Returns the
-- params, the lines saying what was fitted, and warnings.
local function fit_links(ps, base, groups)
    local intra_g, inter_g = {}, {}
    for _, g in ipairs(groups) do
        if g.nodes == 1 then intra_g[#intra_g + 1] = g else inter_g[#inter_g + 1] = g end
    end
    local params = { intra = base.intra and copy(base.intra) or start_of(intra_g),
                     inter = base.inter and copy(base.inter) or start_of(inter_g) }
    params.intra.latency = params.intra.latency or 0
    params.inter.latency = params.inter.latency or 0
    local lines, warnings = {}, {}
    local function describe(tier, label, r, n)
        local free = {}
        for k in pairs(r.free) do free[#free + 1] = k end
        table.sort(free)
        lines[#lines + 1] = string.format("  %s: bandwidth %.6g GB/s, latency %.6g us, fitted on %d points%s",
            label, r.bandwidth / 1e9, r.latency * 1e6, n, #free > 0 and ("; " .. table.concat(free, " and ")
            .. " not constrained by these sizes, kept at the start value") or "")
        params[tier] = { bandwidth = r.bandwidth, latency = r.latency }
    end
    local function count(gs) local n = 0; for _, g in ipairs(gs) do n = n + #g.points end; return n end
    if #intra_g > 0 then
        for _, t in ipairs { "intra", "inter" } do
            if params[t].latency <= 0 then params[t].latency = start_of(intra_g).latency end
        end
        describe("intra", "intra (NVLink tier)", fit_tier(ps, base, params, "intra", intra_g), count(intra_g))
    elseif base.intra then
        lines[#lines + 1] = "  intra (NVLink tier): the base's, no single-node measurement"
    else
        fail("no single-node measurement and no base cluster: the intra-node tier is unknown "
            .. "(give a single-node log, or --cluster PRESET)")
    end
    if #inter_g > 0 then
        if params.inter.latency <= 0 then params.inter.latency = start_of(inter_g).latency end
        describe("inter", "inter (NIC tier)", fit_tier(ps, base, params, "inter", inter_g), count(inter_g))
    elseif base.inter then
        lines[#lines + 1] = "  inter (NIC tier): the base's, no multi-node measurement"
    else
        params.inter = copy(params.intra)
        lines[#lines + 1] = "  inter (NIC tier): NOT MEASURED, a copy of intra (no multi-node log)"
        warnings[#warnings + 1] = "no multi-node measurement: the file's inter tier is a copy of intra, "
            .. "not a measurement"
    end
    return params, lines, warnings
end

-- The GEMM fit into t.device; returns the header lines, the RMS and the
-- max |error| over the rows.
local function fit_device(t, rows)
    local roofline = require "pipesim.models.roofline"
    local dev = t.device
    if type(dev) ~= "table" or not dev.flops then
        fail("GEMM times need the device's peak: give --cluster PRESET (or logs naming a known GPU)")
    end
    for _, k in ipairs { "hbm_bandwidth", "mem_efficiency", "gemm_max", "gemm_overhead" } do
        if not dev[k] then fail("the device has no roofline constant '%s' to calibrate", k) end
    end
    local gmax, oh, used = M.fit_gemm(dev, rows)
    dev.gemm_max, dev.gemm_overhead = gmax, oh
    local lines = { string.format("  GEMMs: gemm_max %.6g (%.4g of %.4g TFLOP/s dense), gemm_overhead %.6g us, "
        .. "fitted on %d of %d rows (the others are memory-bound)", gmax, gmax * dev.flops / 1e12,
        dev.flops / 1e12, oh * 1e6, (function() local n = 0; for _, u in ipairs(used) do
            if u then n = n + 1 end end; return n end)(), #rows),
        string.format("  %8s %8s %8s  %-5s  %13s  %13s  %8s", "m", "n", "k", "dtype", "measured us",
            "roofline us", "error") }
    local s2, worst = 0, 0
    for _, r in ipairs(rows) do
        local tm = roofline.gemm_time(dev, r.m + 0.0, r.n + 0.0, r.k + 0.0, 1, 2)
        local e = tm / r.seconds - 1
        s2, worst = s2 + e * e, math.max(worst, math.abs(e))
        lines[#lines + 1] = string.format("  %8d %8d %8d  %-5s  %13.3f  %13.3f  %8s", r.m, r.n, r.k,
            r.dtype, r.seconds * 1e6, tm * 1e6, pct(e))
    end
    lines[#lines + 1] = string.format("  GEMMs: RMS %.1f%%, max %.1f%%", 100 * math.sqrt(s2 / #rows),
        100 * worst)
    return lines, math.sqrt(s2 / #rows), worst
end

-- calibrate(ps, spec) -> the cluster file's text, and { cluster, rms, max,
-- warnings }. spec: base (a ps.cluster table: its device and NCCL constants
-- are kept, its links fitted), base_name (how the header names it),
-- points (measured collectives { op, ranks, nodes, bytes, time, nccl_op }),
-- gemm (measured GEMMs { m, n, k, dtype, seconds }), inputs (header lines
-- naming the measurements), column (which time the points are).
function M.calibrate(ps, spec)
    local base = copy(spec.base)
    local groups = groups_of(spec.points or {})
    for _, g in ipairs(groups) do base.nodes = math.max(base.nodes or 1, g.nodes) end
    local header = { string.format("pipesim calibrate (pipesim %s): a cluster fitted to measurements",
        ps.version), "inputs:" }
    for _, line in ipairs(spec.inputs or {}) do header[#header + 1] = "  " .. line end
    header[#header + 1] = "base: " .. (spec.base_name or "the given table")
    local t, warnings, rms, max, grms, gmax = base, {}, nil, nil, nil, nil
    if #groups > 0 then
        header[#header + 1] = "fit: each tier's bandwidth and latency minimise the mean of "
            .. "ln(simulated / measured time)^2 over its points (" .. (spec.column or "measured") .. ")"
        local params, lines
        params, lines, warnings = fit_links(ps, base, groups)
        for _, l in ipairs(lines) do header[#header + 1] = l end
        t = with_links(base, params)
        local elines
        elines, rms, max = error_lines(groups, times(ps, t, groups, true))
        header[#header + 1] = "error: simulated / measured - 1, pipesim simulating this file, size by size"
        for _, l in ipairs(elines) do header[#header + 1] = l end
        header[#header + 1] = string.format("collectives: RMS %.1f%%, max %.1f%%", 100 * rms, 100 * max)
    end
    if spec.gemm and #spec.gemm > 0 then
        header[#header + 1] = "fit: GEMM time = FLOPs / (peak x gemm_max) + gemm_overhead, least "
            .. "squares of the relative error"
        local lines
        lines, grms, gmax = fit_device(t, spec.gemm)
        for _, l in ipairs(lines) do header[#header + 1] = l end
    end
    header[#header + 1] = "load: ps.cluster(ps.clusters.load(\"this file\")); set nodes for a "
        .. "larger cluster of the same nodes"
    return M.render(header, t), { cluster = t, rms = rms, max = max, gemm_rms = grms,
                                  gemm_max = gmax, warnings = warnings }
end

-- The base cluster of the CLI: --cluster PRESET[:NODES] or a file's
-- table; else the DGX preset of the GPU the logs name; else textbook
-- links of the logs' shape (no device, no NCCL constants). Returns the
-- table and how the header names it.
local function base_of(ps, opts, runs)
    local nodes, per, gpu = 1, 1, nil
    for _, r in ipairs(runs) do
        nodes, per = math.max(nodes, r.nodes), math.max(per, r.ranks // r.nodes)
        if r.device ~= nil then
            if gpu == nil then gpu = r.device elseif gpu ~= r.device then gpu = false end
        end
    end
    local c = opts.cluster
    if type(c) == "string" then
        local name, n = c:match("^([^:]+):?(%d*)$")
        if not name then fail("--cluster %s: expected PRESET or PRESET:NODES, such as h100:2", c) end
        local ok, t = pcall(ps.clusters.dgx, name, n ~= "" and tonumber(n) or nodes)
        if not ok then fail("--cluster %s: %s", c, (tostring(t):gsub("^.-:%d+: ", ""))) end
        return t, string.format("ps.clusters.dgx(%q, %d) (--cluster %s)", name, t.nodes, c)
    elseif type(c) == "table" then
        return copy(c), "the table " .. tostring(opts.cluster_name) .. " returns"
    elseif c ~= nil then
        fail("--cluster %s: the file must return a table for ps.cluster (the calibrated file "
            .. "replaces its links), got %s", tostring(opts.cluster_name), type(c))
    end
    local key = M.preset_of(gpu)
    if key then
        return ps.clusters.dgx(key, nodes), string.format("ps.clusters.dgx(%q, %d): the DGX preset "
            .. "of the GPU the logs name (%s); its device and NCCL constants are kept", key, nodes, gpu)
    end
    local cc = M.capability_of(gpu)
    return { nodes = nodes, gpus_per_node = per, compute_capability = cc },
        string.format("links of %d node%s of %d GPUs (%s), no device; %s; give --cluster PRESET "
        .. "for a DGX-class node", nodes, nodes > 1 and "s" or "", per,
        gpu and ("the logs name " .. gpu .. ", no preset") or "the logs name no GPU",
        cc and string.format("compute_capability %d: NCCL's protocols for its generation", cc)
        or "textbook links without NCCL's constants")
end

-- `pipesim calibrate` (core/bind/calibrate.c): opts.logs and opts.gemms
-- are lists of { name, text }; cluster (a preset string or a file's
-- value), cluster_name, ranks, nodes, op, in_place. Returns the file's
-- text, the warnings and a one-line summary of the fit.
function M.cli(ps, opts)
    local runs = {}
    for _, f in ipairs(opts.logs or {}) do
        local ok, got = pcall(nccl_log.parse, f.text, f.name, { ranks = opts.ranks, nodes = opts.nodes,
                                                               op = opts.op })
        if not ok then error("calibrate: " .. tostring(got), 0) end
        for _, r in ipairs(got) do runs[#runs + 1] = r end
    end
    local rows = {}
    for _, f in ipairs(opts.gemms or {}) do
        for _, r in ipairs(M.parse_gemm(f.text, f.name)) do rows[#rows + 1] = r end
    end
    local base, base_name = base_of(ps, opts, runs)
    local inputs = {}
    for _, r in ipairs(runs) do
        local first, last = math.huge, 0
        for _, row in ipairs(r.rows) do
            if row.size > 0 then first, last = math.min(first, row.size), math.max(last, row.size) end
        end
        inputs[#inputs + 1] = string.format("nccl-tests %s: %s on %d ranks, %d node%s, %d rows, %s .. %s B "
            .. "(%s layout)", r.where, r.op, r.ranks, r.nodes, r.nodes > 1 and "s" or "", #r.rows,
            first == math.huge and 0 or first, last, r.layout)
    end
    for _, f in ipairs(opts.gemms or {}) do inputs[#inputs + 1] = "GEMM times " .. f.name end
    local text, res = M.calibrate(ps, {
        base = base, base_name = base_name, points = M.points_of(runs, opts.in_place), gemm = rows,
        inputs = inputs, column = opts.in_place and "in-place times" or "out-of-place times",
    })
    local parts = {}
    if res.rms then
        parts[#parts + 1] = string.format("%d measured collectives within RMS %.1f%%, max %.1f%%",
            #M.points_of(runs, opts.in_place), 100 * res.rms, 100 * res.max)
    end
    if res.gemm_rms then
        parts[#parts + 1] = string.format("%d GEMMs within RMS %.1f%%, max %.1f%%", #rows,
            100 * res.gemm_rms, 100 * res.gemm_max)
    end
    local summary = "a cluster reproducing " .. table.concat(parts, " and ") .. ","
    return text, res.warnings, summary
end

return M
