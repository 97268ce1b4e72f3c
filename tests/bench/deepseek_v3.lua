-- make bench (issue 28): one step of DeepSeek-V3 as its report trains it
-- (§3.2): 2,048 H800 (256 DGX nodes), PP 16, EP 64, DP 128, DualPipe, the
-- preset's 61 layers (3 dense), 32 microbatches a replica, ZeRO-1, the
-- gradient sync in one bucket as scenarios/moe.lua runs it; summary
-- recording, the whole process timed by tests/bench/targets.py.
-- -D nodes=N (a multiple of 16 x 64 / 8 = 128 for EP 64) scales it.
--   build/pipesim run tests/bench/deepseek_v3.lua -o x.db
local ps = require "pipesim"
ps.progress(false)
local nodes = ps.args.nodes or 256
local P, EP = 16, tonumber(ps.args.ep) or 64
local model = ps.models.preset("deepseek-v3", { dispatch_dtype = "fp8" })
local r = ps.run{ cluster = ps.cluster(ps.clusters.dgx("H800", nodes)), layers = model,
    stages = P, dp = nodes * 8 // P, ep = EP, microbatches = tonumber(ps.args.microbatches) or 32,
    schedule = "dualpipe", zero = 1, record = "summary",
    grad_sync = { bucket = "1 TB", first_bucket = "1 TB" } }
print(string.format("deepseek-v3 on %d GPUs: step %.6f s, folded %s", nodes * 8, r.makespan,
    tostring(r.folded)))
