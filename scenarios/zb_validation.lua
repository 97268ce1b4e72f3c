-- How close to reality, pipeline schedules: the zero-bubble paper's
-- published bubble rates and throughputs, and DualPipe's published bubble
-- formulas, against pipesim's 1F1B, ZB-H1, ZB-H2, DualPipe and DualPipeV.
-- Prints the README's tables ("How close to reality", "Zero bubble and
-- DualPipe").
--
-- Source (Z): Qi, Wan, Huang and Lin, "Zero Bubble Pipeline Parallelism",
-- ICLR 2024 (openreview tuzTN0eIO5; code sail-sg/zero-bubble-pipeline-
-- parallelism), GPT-3-like models on up to 32 A100 SXM 80GB, one layer
-- fewer on the first and last stages so that every stage costs the same:
--   Table 3  models: 1.5B (p 8, micro batch 6), 6.2B (p 8, mbs 3), 14.6B
--            (p 16, mbs 1), 28.3B (p 32, mbs 1); m = 3p, 4p, 8p.
--   Table 6  profiled T_F, T_B (input gradient), T_W and T_comm (ms) of
--            each setting.
--   Table 5  bubble rates computed from Table 6 ("theoretical calculations
--            instead of real experiments"): (cost - m(T_F+T_B+T_W)) / cost,
--            cost = the longest execution time of all stages (the ILP's
--            objective: a stage's last end minus its first start).
--   Table 4  measured throughput, samples per GPU per second.
-- Source (D): deepseek-ai/DualPipe README, "Pipeline Bubbles and Memory
-- Usage Comparison": bubbles 1F1B (PP-1)(F+B), ZB1P (PP-1)(F+B-2W),
-- DualPipe and DualPipeV (PP/2-1)(F&B+B-3W), B the full backward.
--
--   pipesim run scenarios/zb_validation.lua
local ps = require "pipesim"

-- model, p, m, T_F, T_B, T_W, T_comm (Table 6, ms); Table 5: 1F1B, ZB-H1,
-- ZB-H2, ZB-1p, ZB-2p; Table 4: ZB-2p, ZB-1p, 1F1B samples/GPU/s
local Z = {
    { "1.5B", 8, 24, 18.522, 18.086, 9.337, 0.601, 0.2431, 0.1585, 0.1083, 0.1585, 0.0433, 14.5, 12.9, 11.8 },
    { "1.5B", 8, 32, 18.513, 18.086, 9.331, 0.626, 0.1985, 0.1242, 0.0837, 0.1242, 0.0039, 14.8, 13.4, 12.5 },
    { "1.5B", 8, 64, 18.546, 18.097, 9.321, 0.762, 0.1240, 0.0674, 0.0444, 0.0674, 0.0026, 14.9, 14.2, 13.6 },
    { "6.2B", 8, 24, 29.718, 29.444, 19.927, 0.527, 0.2347, 0.1323, 0.0698, 0.1323, 0.0029, 4.32, 3.88, 3.50 },
    { "6.2B", 8, 32, 29.802, 29.428, 19.530, 0.577, 0.1898, 0.1045, 0.0559, 0.1045, 0.0022, 4.35, 4.00, 3.70 },
    { "6.2B", 8, 64, 29.935, 29.621, 19.388, 0.535, 0.1091, 0.0554, 0.0294, 0.0554, 0.0010, 4.39, 4.20, 4.03 },
    { "14.6B", 16, 48, 11.347, 11.248, 8.132, 0.377, 0.2552, 0.1397, 0.0672, 0.1397, 0.0066, 1.81, 1.61, 1.40 },
    { "14.6B", 16, 64, 11.307, 11.254, 8.101, 0.379, 0.2082, 0.1088, 0.0516, 0.1088, 0.0054, 1.83, 1.67, 1.49 },
    { "14.6B", 16, 128, 11.325, 11.308, 8.109, 0.378, 0.1251, 0.0576, 0.0266, 0.0576, 0.0028, 1.85, 1.76, 1.64 },
    { "28.3B", 32, 96, 10.419, 10.207, 7.715, 0.408, 0.2646, 0.1421, 0.0641, 0.1421, 0.0038, 0.99, 0.87, 0.76 },
    { "28.3B", 32, 128, 10.408, 10.204, 7.703, 0.408, 0.2168, 0.1106, 0.0490, 0.1106, 0.0029, 1.00, 0.90, 0.80 },
    { "28.3B", 32, 256, 10.402, 10.248, 7.698, 0.460, 0.1352, 0.0594, 0.0257, 0.0594, 0.0018, 1.00, 0.96, 0.88 },
}

-- `-D quick=1` (the test suite) runs the first setting of each model
local quick = ps.args.quick

-- one pipeline of p equal stages: a stage is one layer of the profiled
-- times; every p2p transfer takes T_comm (a link of that latency and no
-- bandwidth limit); no optimizer step (Table 5 counts none)
local function run(c, schedule, record)
    local name, p, m, F, B, W, comm = table.unpack(c)
    local cluster = ps.cluster { ranks = p, device = { flops = 1e15, memory = "80 GiB" },
        link = { bandwidth = 1e18, latency = comm / 1e3 } }
    local layers = {}
    for i = 1, p do
        layers[i] = { name = "stage " .. (i - 1), fwd_time = F / 1e3, bwd_input_time = B / 1e3,
            bwd_weight_time = W / 1e3, params = 1, act_bytes = 1, out_bytes = 1 }
    end
    return ps.run { name = string.format("Z %s m=%d %s", name, m, schedule), cluster = cluster,
        layers = layers, stages = p, microbatches = m, schedule = schedule, optimizer_time = 0,
        record = record or "none" }
end

-- Table 5's rate from a run: 1 - m(T_F+T_B+T_W) / makespan. For 1F1B
-- and ZB-H1 the first stage starts at 0 and ends last, so its span is the
-- makespan and this is the paper's cost; ZB-H2's stages end at different
-- times, and its cost is the longest stage span (results/queries/
-- zb_bubble.sql computes that from the recorded events).
local function rate(c, r)
    local m, F, B, W = c[3], c[4], c[5], c[6]
    return 1 - m * (F + B + W) / 1e3 / r.makespan
end

local function pct(x) return string.format("%6.2f%%", 100 * x) end
local ZB_H2_NOTE = "ZB-H2 here is 1 - m(T_F+T_B+T_W)/makespan; the paper's longest-span rate: " ..
    "sqlite3 results/zb_validation.db < results/queries/zb_bubble.sql"

print("Z, Table 5: bubble rate, published / pipesim")
print(string.format("%-6s %3s %4s  %-17s %-17s %-17s %8s", "model", "p", "m", "1F1B", "ZB-H1 (= ZB-1p)",
    "ZB-H2", "ZB-2p"))
local rows, seen = {}, {}
local e1, e2 = 0, 0
for _, c in ipairs(Z) do
    if not quick or not seen[c[1]] then
        seen[c[1]] = true
        local r1 = run(c, "1f1b")
        local rh1 = run(c, "zb_h1")
        local rh2 = run(c, "zb_h2", "events")
        local b1, bh1, bh2 = rate(c, r1), rate(c, rh1), rate(c, rh2)
        e1 = math.max(e1, math.abs(b1 - c[8]))
        e2 = math.max(e2, math.abs(bh1 - c[9]))
        print(string.format("%-6s %3d %4d  %s /%s  %s /%s  %s /%s  %s", c[1], c[2], c[3],
            pct(c[8]), pct(b1), pct(c[9]), pct(bh1), pct(c[10]), pct(bh2), pct(c[12])))
        rows[#rows + 1] = { c = c, r1 = r1, rh1 = rh1, rh2 = rh2 }
    end
end
print(string.format("largest |difference|: 1F1B %.2f points, ZB-H1 %.2f points", 100 * e1, 100 * e2))
print(ZB_H2_NOTE)
print()

-- Table 4: measured throughput relative to 1F1B. pipesim's ratio is the
-- ratio of step times (the same samples per step)
print("Z, Table 4: throughput relative to 1F1B, measured / pipesim")
print(string.format("%-6s %3s %4s  %-15s %-15s", "model", "p", "m", "ZB-1p (ZB-H1)", "ZB-2p (ZB-H2)"))
for _, w in ipairs(rows) do
    local c = w.c
    print(string.format("%-6s %3d %4d  %.3f / %.3f   %.3f / %.3f", c[1], c[2], c[3], c[14] / c[15],
        w.r1.makespan / w.rh1.makespan, c[13] / c[15], w.r1.makespan / w.rh2.makespan))
end
print()

-- D: the DualPipe README's bubbles on PP = 8 stages (DualPipeV: 8 stages
-- on 4 ranks), F = B_input = W = 10 ms, so B (full) = 20 ms and F&B = F +
-- B = 30 ms (pipesim's default: no overlap gain); free links; m = 20
-- (20 microbatches, as the README's DualPipe figure). The bubble is a
-- rank's idle time, makespan - m(F + B), on the worst rank.
print("D, DualPipe README: bubble on the worst rank, formula / pipesim (ms)")
local F, Bi, W, m = 0.010, 0.010, 0.010, 20
local B, FB = Bi + W, Bi + W + 0.010
for _, s in ipairs {
    { "1F1B", "1f1b", 8, 1, (8 - 1) * (F + B) },
    { "ZB1P (ZB-H1)", "zb_h1", 8, 1, (8 - 1) * (F + B - 2 * W) },
    { "DualPipe", "dualpipe", 8, 1, (8 / 2 - 1) * (FB + B - 3 * W) },
    { "DualPipeV", "dualpipev", 4, 2, (8 / 2 - 1) * (FB + B - 3 * W) },
} do
    local ranks, v = s[3], s[4]
    local cluster = ps.cluster { ranks = ranks, device = { flops = 1e15, memory = "80 GiB" } }
    local layers = {}
    for i = 1, 8 do
        layers[i] = { fwd_time = F, bwd_input_time = Bi, bwd_weight_time = W, params = 1,
            act_bytes = 1, out_bytes = 1 }
    end
    local r = ps.run { name = "D " .. s[1], cluster = cluster, layers = layers, stages = ranks,
        virtual_stages = v, microbatches = m, schedule = s[2], optimizer_time = 0, record = "none" }
    local worst = 0
    for k = 1, ranks do worst = math.max(worst, r.makespan * r.stage_bubble[k]) end
    print(string.format("%-14s %8.1f / %8.1f", s[1], 1e3 * s[5], 1e3 * worst))
end
