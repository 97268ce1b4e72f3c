-- make bench, sweeps (issue 4): how many pipeline steps a Lua sweep runs per
-- minute. Llama 2 7B shape (32 blocks + embedding + head = 34 layers) on 4
-- stages, 8 microbatches, 1F1B, record = "summary", every one of the
-- C(33, 3) = 5456 contiguous partitions, repeated until -D runs=N (default
-- 20000) steps. Also times the parts of a run on their own, to show where
-- the time goes: resolving the partition in Lua, the step with recording
-- off, and the step with summary recording (run, stage, rank_stat rows).
--   build/pipesim run tests/bench/sweep.lua -o /tmp/pipesim-sweep.db
-- Target: at least 5,000 runs per minute.
local ps = require "pipesim"

local N = ps.args.runs or 20000
local layers = ps.models.preset("llama2-7b", { seq = 4096, microbatch = 1 })
local node = ps.clusters.dgx("A100", 1)
local cluster = ps.cluster{ ranks = 4, device = node.device, link = node.intra }
ps.progress(false)

-- Wall clock: `date +%s.%N` when a shell is there (os.time() counts whole
-- seconds only), os.time() otherwise.
local function wall()
    local ok, p = pcall(io.popen, "date +%s.%N")
    if ok and p then
        local t = tonumber(p:read("l"))
        p:close()
        if t then return t end
    end
    return os.time()
end

-- The partitions, cycled: a fresh list each time, as a user's loop has.
local parts = {}
for counts in ps.partition.enumerate(#layers, 4) do parts[#parts + 1] = counts end

local function sweep(n, record)
    local best
    for i = 1, n do
        local counts = parts[(i - 1) % #parts + 1]
        local r = ps.run{ name = "sweep", cluster = cluster, layers = layers,
            stages = 4, microbatches = 8, schedule = "1f1b",
            partition = counts, record = record }
        if not best or r.makespan < best then best = r.makespan end
    end
    return best
end

local function timed(label, n, fn)
    local c0, w0 = os.clock(), wall()
    fn()
    local cpu, w = os.clock() - c0, wall() - w0
    print(string.format("%-34s %7d runs  %7.3f s cpu  %7.3f s wall  %9.0f runs/min (cpu)  %9.0f runs/min (wall)  %7.1f us/run",
        label, n, cpu, w, n / cpu * 60, n / w * 60, 1e6 * cpu / n))
    return n / cpu * 60
end

print(string.format("sweep: %s, %d layers, 4 stages, 8 microbatches, 1F1B, %d partitions cycled",
    "llama2-7b", #layers, #parts))
local small = math.min(N, 5000)
timed("partition.resolve only (Lua)", small, function()
    for i = 1, small do ps.partition.resolve(parts[(i - 1) % #parts + 1], layers, 4) end
end)
timed("ps.run, record = \"none\"", small, function() sweep(small, "none") end)
local rate = timed("ps.run, record = \"summary\"", N, function() sweep(N, "summary") end)
print(string.format("sweep rate: %.0f runs per minute (target 5000): %s", rate,
    rate >= 5000 and "ok" or "BELOW TARGET"))
