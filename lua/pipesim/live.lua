-- Live mode's calibration (issue 25; core/live/calib.c): ps.calibrate{}
-- measures the transport with a ping-pong between two workers over sizes,
-- fits latency + bytes / bandwidth by least squares, times the live MLP's
-- layers, and writes what it found as a cluster file (a Lua chunk
-- returning a ps.cluster table) and a profile CSV (ps.profile.load), so
-- that the simulator and live runs can be compared on the same machine.
-- The cluster file goes through lua/pipesim/calibrate.lua's writer (the
-- nccl-tests and GEMM calibration's), read back by ps.clusters.load.
local M = {}

local function fmt_time(s)
    if s >= 1e-3 then return string.format("%.6g ms", s * 1e3) end
    return string.format("%.6g us", s * 1e6)
end

-- The simulated twin of N local ranks (N > 2): one host whose ranks
-- share it. Each rank has a port (a link to the host and one back, the
-- bandwidth of a lone ping-pong flow, half the latency each) and every
-- flow crosses one link inside the host, the "bus", whose bandwidth is
-- the sum of the N flows of the exchange: on loopback every byte is
-- copied by the CPUs (into the kernel and out), so flows share the cores
-- and their memory bandwidth, whatever the pair. The latency is the
-- exchange's, measured with every rank active: it includes the wait for
-- a core when ranks outnumber cores. Max-min fair sharing, as the
-- kernel's scheduler shares the cores.
function M.shared_model(name, n, latency, port, bus)
    local links = {}
    for r = 0, n - 1 do
        links[#links + 1] = { r, "host_in", bandwidth = port, latency = latency / 2, duplex = false }
        links[#links + 1] = { "host_out", r, bandwidth = port, latency = latency / 2,
                              duplex = false }
    end
    links[#links + 1] = { "host_in", "host_out", bandwidth = bus, latency = 0, duplex = false }
    return { name = name, ranks = n, sharing = "fair", links = links }
end

local function point_lines(header, sizes, one_way)
    for i, x in ipairs(sizes) do
        header[#header + 1] = string.format("  %12d B  %s", math.floor(x), fmt_time(one_way[i]))
    end
end

-- The cluster file: a ps.cluster table written by calibrate.lua's
-- render (the nccl-tests and GEMM calibration's writer, so that
-- ps.clusters.load reads both alike), the points it was fitted from in
-- its header.
function M.write_cluster(path, c)
    local header = { "pipesim calibrate --live: live mode's TCP transport" }
    local t
    if c.model then
        header[#header + 1] = string.format("%d ranks sharing one host: the exchange (every rank "
            .. "sends to the next at once), %s times,", c.ranks,
            c.statistic == "min" and "fastest" or "median")
        header[#header + 1] = "Hockney's latency (the smallest size) and bandwidth (the slope from "
            .. "a quarter of the largest size up), per flow:"
        point_lines(header, c.sizes, c.one_way)
        header[#header + 1] = string.format("  latency %s, %.6g GB/s a flow: the host's bus %.6g GB/s "
            .. "(%d flows)", fmt_time(c.latency), c.bandwidth / 1e9, c.bus / 1e9, c.ranks)
        header[#header + 1] = "a lone pair's ping-pong, one-way times (the ports):"
        point_lines(header, c.pair.sizes, c.pair.one_way)
        header[#header + 1] = string.format("  latency %s, port %.6g GB/s",
            fmt_time(c.pair.latency), c.port / 1e9)
        t = c.model
    else
        header[#header + 1] = "ping-pong one-way times, fitted by least squares (weights 1/t^2)"
        header[#header + 1] = "to latency + bytes / bandwidth:"
        point_lines(header, c.sizes, c.one_way)
        t = { name = c.name, ranks = c.ranks,
              link = { latency = c.latency, bandwidth = c.bandwidth } }
    end
    header[#header + 1] = "load: ps.cluster(ps.clusters.load(\"this file\"))"
    local f, err = io.open(path, "w")
    if not f then error("ps.calibrate: cannot write " .. tostring(err), 0) end
    f:write(require("pipesim.calibrate").render(header, t))
    f:close()
end

-- The profile CSV (lua/pipesim/profile.lua's format): per layer its
-- forward, backward (B + W) and weight-gradient (W) seconds.
function M.write_profile(path, p)
    local f, err = io.open(path, "w")
    if not f then error("ps.calibrate: cannot write " .. tostring(err), 0) end
    f:write("name,fwd_s,bwd_s,wgt_s\n")
    for i = 1, #p.fwd do
        f:write(string.format("layer %d,%.9g,%.9g,%.9g\n", i - 1, p.fwd[i],
            p.bwd[i] + p.wgt[i], p.wgt[i]))
    end
    f:close()
end

local KNOWN = { ranks = true, sizes = true, iterations = true, warmup = true, reps = true,
                layers = true, compute = true, inject = true, cluster = true, profile = true,
                statistic = true, concurrent = true }

-- Hockney's parameters of the exchange (Hockney 1994, "The
-- communication challenge for MPP"): the latency is the time of a message
-- without payload (the smallest size), the bandwidth the asymptotic one,
-- the least-squares slope through the sizes from a quarter of the largest
-- up. On loopback with more ranks than cores the time is not linear in
-- the size: a message past the socket buffers waits for its peer to be
-- scheduled once per buffer-full, so that large messages cost more a
-- byte than small ones, and a fit over every size would get both wrong.
function M.hockney(sizes, t)
    local lo, most = 1, 0
    for i, x in ipairs(sizes) do
        if x < sizes[lo] then lo = i end
        most = math.max(most, x)
    end
    local n, sx, st, sxx, sxt = 0, 0, 0, 0, 0
    for i, x in ipairs(sizes) do
        if x >= most / 4 then
            n, sx, st, sxx, sxt = n + 1, sx + x, st + t[i], sxx + x * x, sxt + x * t[i]
        end
    end
    local d = n * sxx - sx * sx
    if n < 2 or not (d > 0) then
        error("ps.calibrate: the exchange needs two sizes from a quarter of the largest up", 0)
    end
    local slope = (n * sxt - sx * st) / d
    return t[lo], slope > 0 and 1 / slope or math.huge
end

local function measure(core, args)
    local ok, r = pcall(core.live_calibrate, args)
    if not ok then error("ps.calibrate: " .. tostring(r), 4) end
    return r
end

-- "256 KiB", "16 MiB": a size of the growth below.
local function size_text(x)
    if x >= 1048576 then return string.format("%g MiB", x / 1048576) end
    return string.format("%g KiB", x / 1024)
end

-- The sizes a fit can use, found by growing them (issue 25): 0 B (the
-- latency), then from 16 KiB up by 4x until the time clearly grows with
-- the size, the largest's at least 1.5 times that of a quarter of it (the
-- transfer at least the latency, past the noise of a loaded machine's
-- wake-ups), and the slope from the quarter to the largest within 25% of
-- the one below it (Hockney's asymptotic bandwidth: the slope no longer
-- changes), or up to 16 MiB (four times the 4 MiB a ring step of 16 MB
-- moves on 4 ranks). measure(list) returns the times of a list of sizes
-- (0 first: a measurement takes two). Returns the sizes and their times;
-- fails in one line with every size's time when none grows.
M.GROW_FIRST, M.GROW_LAST, M.GROW_RATIO, M.GROW_SLOPES = 16384, 16 * 1048576, 1.5, 0.25
function M.grow(measure_sizes, what)
    local sizes = { 0, M.GROW_FIRST, 4 * M.GROW_FIRST, 16 * M.GROW_FIRST }
    local t = measure_sizes(sizes)
    while true do
        local n = #sizes
        local e, q, l = sizes[n - 2], sizes[n - 1], sizes[n]
        local grows = t[n] >= M.GROW_RATIO * t[n - 1]
        local lo, hi = (t[n - 1] - t[n - 2]) / (q - e), (t[n] - t[n - 1]) / (l - q)
        if grows and lo > 0 and math.abs(hi / lo - 1) <= M.GROW_SLOPES then break end
        if l >= M.GROW_LAST then
            if grows then break end
            local pts = {}
            for i = 2, n do
                pts[#pts + 1] = string.format("%s %.3g ms", size_text(sizes[i]), t[i] * 1e3)
            end
            error(string.format("ps.calibrate: %s's time does not grow with the size up to %s "
                .. "(%s): no size takes %g times a quarter of it (a loaded machine's waits hide "
                .. "the transfer); give sizes", what, size_text(l), table.concat(pts, ", "),
                M.GROW_RATIO), 0)
        end
        sizes[n + 1], t[n + 1] = 4 * l, measure_sizes({ 0, 4 * l })[2]
    end
    return sizes, t
end

-- measure() over the sizes M.grow picks (spec.sizes, when given, as they
-- are): the first run with every field (the layers' profile too), the
-- next ones without the profile. Returns that first run's result with
-- the sizes and times of them all.
local function measure_grown(core, args, what)
    if args.sizes then return measure(core, args) end
    local first
    local sizes, t = M.grow(function(list)
        local a = {}
        for k, v in pairs(args) do
            if not first or (k ~= "layers" and k ~= "compute") then a[k] = v end
        end
        a.sizes = list
        local r = measure(core, a)
        first = first or r
        return r.one_way
    end, what)
    first.sizes, first.one_way = sizes, t
    return first
end

-- calibrate(core, spec): the measurement (core.live_calibrate) and, when
-- asked, the files. Two ranks: the ping-pong's latency and bandwidth, a
-- mesh link. More: the ping-pong of a lone pair (the ports) and the
-- exchange among all ranks (the latency and the host's bus), the model
-- above. Returns { latency, bandwidth, sizes, one_way, fwd, bwd, wgt,
-- and with ranks > 2: pair, port, bus, model }.
function M.calibrate(core, spec)
    spec = spec or {}
    if type(spec) ~= "table" then error("ps.calibrate: expected a table", 3) end
    for k in pairs(spec) do
        if not KNOWN[k] then error("ps.calibrate: unknown field '" .. tostring(k) .. "'", 3) end
    end
    local args = {}
    for k, v in pairs(spec) do
        if k ~= "cluster" and k ~= "profile" then args[k] = v end
    end
    if args.layers and not args.compute then args.compute = { model = "mlp" } end
    local n = spec.ranks or 2
    args.concurrent = spec.concurrent or (math.type(n) == "integer" and n or nil)
    local r
    if math.type(n) == "integer" and n > 2 then
        local pair = {}
        for k, v in pairs(args) do
            if k ~= "layers" and k ~= "compute" and k ~= "concurrent" then pair[k] = v end
        end
        pair.ranks = 2
        local p = measure_grown(core, pair, "the ping-pong")
        p.latency, p.bandwidth = core.live_fit(p.sizes, p.one_way)
        args.pattern, args.statistic = "exchange", spec.statistic or "median"
        r = measure_grown(core, args, "the exchange")
        r.statistic = args.statistic
        r.latency, r.bandwidth = M.hockney(r.sizes, r.one_way)
        r.pair = p
        r.bus = n * r.bandwidth
        if r.bus == math.huge then
            error("ps.calibrate: the exchange's times do not grow with the size: give larger sizes", 3)
        end
        -- a lone flow runs at the pair's rate, never above the bus's
        r.port = math.min(math.max(p.bandwidth, r.bandwidth), r.bus)
        r.model = M.shared_model("loopback tcp, " .. n .. " ranks sharing the host (calibrated)", n,
            math.max(r.latency, 0), r.port, r.bus)
    else
        r = measure_grown(core, args, "the ping-pong")
        r.latency, r.bandwidth = core.live_fit(r.sizes, r.one_way)
    end
    r.ranks = n
    r.name = "loopback tcp (calibrated)"
    if spec.cluster then M.write_cluster(spec.cluster, r) end
    if spec.profile then
        if not r.fwd then error("ps.calibrate: field 'profile' needs layers = N", 3) end
        M.write_profile(spec.profile, r)
    end
    return r
end

return M
