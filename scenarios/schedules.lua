-- schedules: every pipeline schedule on one model, as in the DeepSeek-V3
-- report's comparison table (section 3.2.1, Table 2): step time, bubble,
-- peak activation memory per rank and parameters held per rank. Twice: a
-- model whose weight-gradient backward W costs as much as the
-- input-gradient one B (GEMM-dominated layers, W = B = F), and one where
-- W is small (W = F/4, B = 1.75 F: the same total backward, as when
-- attention and memory-bound ops dominate B). The DualPipe rows run
-- twice: with pipesim's default FB timing (nothing hidden, F + B) and
-- with fb_interference = 0.5 (half of the shorter action hidden behind
-- the longer, standing for the expert-parallel all-to-all that DualPipe
-- overlaps; pipesim's layers here have no all-to-all of their own).
--
--   pipesim run scenarios/schedules.lua
--   pipesim report results/schedules.db
local ps = require "pipesim"

local p = 4
local m = ps.args.quick and 8 or 16
-- free links: the setting of the closed forms
local cluster = ps.cluster{ ranks = p, device = { memory = "80 GiB" } }

-- 16 layers of 10 ms forward, 100M parameters, 1 GiB of activations of
-- which W needs a quarter after B (its GEMMs' inputs and output grads)
local function model(b, w)
    local l = {}
    for i = 1, 16 do
        l[i] = { name = "block " .. (i - 1), fwd_time = 0.010, bwd_input_time = b,
                   bwd_weight_time = w, params = 100e6, act_bytes = "1 GiB",
                   bwd_weight_bytes = "256 MiB", out_bytes = "16 MiB" }
    end
    return l
end
local models = {
    { "W = B", model(0.010, 0.010) },
    { "W small", model(0.0175, 0.0025) },
}

-- { schedule, virtual stages, split_backward, fb_interference }
local schedules = {
    { "gpipe", 1 }, { "1f1b", 1 }, { "1f1b", 1, true }, { "interleaved", 2 },
    { "looped_bfs", 2 }, { "zb_h1", 1 }, { "zb_h2", 1 }, { "interleaved_zb", 2 },
    { "zbv", 2 }, { "dualpipev", 2 }, { "dualpipe", 1 },
    { "dualpipev", 2, false, 0.5 }, { "dualpipe", 1, false, 0.5 },
}

for _, md in ipairs(models) do
    print(string.format("model: %s, p = %d, m = %d", md[1], p, m))
    print(string.format("  %-30s %9s %8s %12s %14s", "schedule", "step", "bubble",
                          "peak act.", "params/rank"))
    for _, s in ipairs(schedules) do
        local name = s[1] .. (s[2] > 1 and " v=2" or "") .. (s[3] and " +W" or "")
                     .. (s[4] and (" fb_interf. " .. s[4]) or "")
        local r = ps.run{ name = md[1] .. ": " .. name, cluster = cluster, layers = md[2],
                            stages = p, virtual_stages = s[2], microbatches = m,
                            schedule = s[1], split_backward = s[3], fb_interference = s[4] }
        local act, params = 0, 0
        for k = 1, p do
            act = math.max(act, r.peak_memory[k] - r.static_memory[k])
            params = math.max(params, r.static_memory[k] / 16) -- 16 bytes per parameter
        end
        print(string.format("  %-30s %9s %8s %12s %14.0fM", name, ps.seconds(r.makespan),
                              ps.pct(r.bubble), ps.bytes(act), params / 1e6))
    end
    print()
end
