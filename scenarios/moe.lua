-- moe: how large an expert-parallel group for DeepSeek-V3 on H800, and what
-- DualPipe's overlap buys against 1F1B.
--
-- DeepSeek-V3 (the preset: 61 layers, 256 routed experts of 2048, top-8, one
-- shared expert, MLA, one MTP layer; FP8 dispatch, BF16 combine as its report
-- §3.3.2 trains) on DGX H800 nodes (8 GPUs on NVLink, 8 400 Gb/s NICs a
-- node), pipeline-parallel, the experts over EP 8 (one node: every
-- all-to-all on NVLink), EP 32 and EP 64 (the report's: 8 nodes, the
-- all-to-all through the NICs), each with DualPipe (the report's schedule)
-- and 1F1B. For each: the step, the all-to-all the slowest rank waits for
-- (exposed), of which at DualPipe's overlapped pairs' ends, the memory per
-- GPU.
--
-- Scale. Every all-to-all is simulated as the flows of every rank of every
-- EP group (ep (ep - 1) flows a group, four per MoE layer and microbatch,
-- contending on NVLink and the NICs), so a step's cost grows as GPUs x ep x
-- layers x microbatches, and faster with ep: the flows of one all-to-all
-- end at different times and each end re-shares the links. The report's
-- run (2,048 GPUs, PP 16, EP 64, 32 microbatches) is beyond the engine
-- today, and so is EP 64 at any depth (one all-to-all of 4,032 flows a
-- group). By default this scenario runs a slice with the report's layers
-- and the same ratio of microbatches to stages: 4 pipeline stages of 2
-- DeepSeek-V3 layers (8 layers, the first dense), 8 microbatches
-- (DualPipe's least, 2 x stages), EP 8, 16 and 32 over 32 data-parallel
-- pipelines: 128 GPUs. -D stages=, -D layers=, -D microbatches=, -D gpus=,
-- -D ep=<largest> change it. -D quick=1: 2 stages, 4 layers, EP 8 and 16
-- (CI). The data-parallel gradient sync runs in one bucket after the
-- backward (grad_sync below): Megatron's 40 M-parameter buckets on
-- DeepSeek-V3's experts cost more events than the all-to-alls.
local ps = require "pipesim"

local quick = ps.args.quick
local P = tonumber(ps.args.stages) or (quick and 2 or 4)
local LAYERS = tonumber(ps.args.layers) or (quick and 4 or 8)
local M = tonumber(ps.args.microbatches) or 2 * P
local EPS = quick and { 8, 16 } or { 8, 16, 32 }
if ps.args.ep then EPS[#EPS] = tonumber(ps.args.ep) end
local GPUS = tonumber(ps.args.gpus) or P * EPS[#EPS]

-- the first layer dense as in DeepSeek-V3 (its first three of 61); the
-- report's own depth keeps its three
local dense = LAYERS >= 61 and 3 or 1
local moe_layers = {}
for i = 1, LAYERS do moe_layers[i] = i > dense and 1 or 0 end
local model = ps.models.preset("deepseek-v3", { layers = LAYERS, moe_layers = moe_layers,
                                                dispatch_dtype = "fp8" })
local cluster = ps.cluster(ps.clusters.dgx("H800", GPUS // 8))

local function max(t)
    local x = 0
    for _, v in ipairs(t) do x = math.max(x, v) end
    return x
end

print(string.format("DeepSeek-V3, %d layers on %d H800 (PP %d x DP %d), %d microbatches, " ..
    "even routing", LAYERS, GPUS, P, GPUS // P, M))
print(string.format("%-18s %9s %14s %14s %11s", "plan", "step", "exposed a2a",
    "at pairs", "memory/GPU"))
local results = {}
for _, ep in ipairs(EPS) do
    for _, schedule in ipairs { "dualpipe", "1f1b" } do
        local name = string.format("ep%d/%s", ep, schedule)
        local r = ps.run{ name = name, cluster = cluster, layers = model, stages = P,
                          dp = GPUS // P, ep = ep, microbatches = M, schedule = schedule,
                          zero = 1, record = "summary",
                          grad_sync = { bucket = "1 TB", first_bucket = "1 TB" } }
        results[name] = r
        print(string.format("%-18s %9s %14s %14s %8.1f GB", name, ps.seconds(r.makespan),
            ps.seconds(max(r.exposed_a2a)), ps.seconds(max(r.exposed_a2a_overlapped)),
            max(r.peak_memory) / 1e9))
    end
end
print(results[string.format("ep%d/dualpipe", EPS[1])].moe.routing)

-- the conclusion, from the numbers above
local best, bt = nil, math.huge
for name, r in pairs(results) do
    if r.makespan < bt then best, bt = name, r.makespan end
end
local big = EPS[#EPS]
local dp_, f1 = results[("ep%d/dualpipe"):format(big)], results[("ep%d/1f1b"):format(big)]
print(string.format("fastest: %s; at EP %d DualPipe exposes %s of all-to-all against " ..
    "1F1B's %s (%.0f%% less)", best, big, ps.seconds(max(dp_.exposed_a2a)),
    ps.seconds(max(f1.exposed_a2a)),
    100 * (1 - max(dp_.exposed_a2a) / math.max(max(f1.exposed_a2a), 1e-300))))
