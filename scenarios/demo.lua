-- demo: one model, one cluster, three pipeline schedules.
--
-- A 16-layer model on 4 GPUs (one pipeline stage each), 8 microbatches.
-- GPipe and 1F1B have the same bubble, (p-1)/(m+p-1) = 3/11 = 27.3%;
-- interleaving v = 2 model chunks per GPU shrinks it to (p-1)/(v*m+p-1).
-- 1F1B holds at most p - s microbatches of activations on stage s, GPipe
-- holds all m: that is why everyone runs 1F1B.
--
--   pipesim run scenarios/demo.lua          (or: make demo)
--   pipesim report results/demo.db          (compare the runs)
local ps = require "pipesim"

-- An A100-class GPU at 50% of its dense bf16 peak. No `link`: free
-- communication, the setting of the closed forms.
local cluster = ps.cluster{
    ranks = 4,
    device = { flops = "312 TFLOPS", efficiency = 0.5, memory = "80 GiB" },
}

-- 16 identical transformer-ish layers: 1.56 TFLOP forward per microbatch
-- (10 ms at 156 TFLOP/s), 200M parameters, 2 GiB of activations kept for
-- the backward.
local layers = {}
for i = 1, 16 do
    layers[i] = { name = "block " .. (i - 1), fwd_flops = "1.56 TFLOP",
                    params = 200e6, act_bytes = "2 GiB", out_bytes = "16 MiB" }
end

local runs = {}
for _, s in ipairs{ { "gpipe", 1 }, { "1f1b", 1 }, { "interleaved", 2 } } do
    local r = ps.run{
        name = s[1] .. (s[2] > 1 and (" v=" .. s[2]) or ""),
        cluster = cluster, layers = layers, stages = 4, microbatches = 8,
        schedule = s[1], virtual_stages = s[2],
    }
    ps.show(r, 120) -- summary line and ASCII Gantt, 120 columns wide
    print()
    runs[#runs + 1] = r
end

print(string.format("%-16s %10s %8s %12s   %s", "schedule", "step", "bubble",
                      "closed form", "peak memory per GPU (rank 0..3)"))
for _, r in ipairs(runs) do
    local peaks = {}
    for i, b in ipairs(r.peak_memory) do peaks[i] = ps.bytes(b) end
    print(string.format("%-16s %10s %8s %12s   %s", r.name, ps.seconds(r.makespan),
                          ps.pct(r.bubble), ps.pct(r.closed_form_bubble),
                          table.concat(peaks, "  ")))
end
