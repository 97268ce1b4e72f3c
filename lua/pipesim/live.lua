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

-- The cluster file: a ps.cluster table written by calibrate.lua's
-- render (the nccl-tests and GEMM calibration's writer, so that
-- ps.clusters.load reads both alike), the points it was fitted from in
-- its header.
function M.write_cluster(path, c)
    local header = { "pipesim calibrate --live: live mode's TCP transport",
                     "ping-pong one-way times, fitted by least squares (weights 1/t^2)",
                     "to latency + bytes / bandwidth:" }
    for i, x in ipairs(c.sizes) do
        header[#header + 1] = string.format("  %12d B  %s", math.floor(x), fmt_time(c.one_way[i]))
    end
    header[#header + 1] = "load: ps.cluster(ps.clusters.load(\"this file\"))"
    local t = { name = c.name, ranks = c.ranks,
                link = { latency = c.latency, bandwidth = c.bandwidth } }
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
                statistic = true }

-- calibrate(core, spec): the measurement (core.live_calibrate) and, when
-- asked, the files. Returns { latency, bandwidth, sizes, one_way, fwd,
-- bwd, wgt }.
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
    local ok, r = pcall(core.live_calibrate, args)
    if not ok then error("ps.calibrate: " .. tostring(r), 3) end
    r.ranks = spec.ranks or 2
    r.name = "loopback tcp (calibrated)"
    if spec.cluster then M.write_cluster(spec.cluster, r) end
    if spec.profile then
        if not r.fwd then error("ps.calibrate: field 'profile' needs layers = N", 3) end
        M.write_profile(spec.profile, r)
    end
    return r
end

return M
