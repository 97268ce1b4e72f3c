-- bubble: the pipeline bubble against the number of microbatches for GPipe,
-- 1F1B and interleaved 1F1B (2 chunks per rank) on 4 uniform stages with
-- free links, the setting of the closed forms (p-1)/(m+p-1) and
-- (p-1)/(v*m+p-1) recorded beside each run in run.closed_form_bubble. The
-- README's plot:
--
--   pipesim run scenarios/bubble.lua
--   pipesim plot results/bubble.db --x microbatches --y bubble --by schedule \
--     --dashed closed_form_bubble -o docs/bubble.svg
local ps = require "pipesim"

local p = 4
local ms = ps.args.quick and { 4, 8, 16 } or { 4, 8, 12, 16, 24, 32, 48, 64 }
local cluster = ps.cluster{ ranks = p }
-- 16 equal layers: 10 ms forward, 20 ms backward
local layers = {}
for i = 1, 16 do layers[i] = { fwd_time = 0.010, bwd_time = 0.020 } end

local schedules = { { "gpipe", 1 }, { "1f1b", 1 }, { "interleaved", 2 } }
for _, s in ipairs(schedules) do
    for _, m in ipairs(ms) do
        local r = ps.run{ name = string.format("%s m=%d", s[1], m), cluster = cluster,
                            layers = layers, stages = p, virtual_stages = s[2],
                            microbatches = m, schedule = s[1], record = "summary" }
        print(string.format("%-12s m = %2d  bubble %s", s[1], m, ps.pct(r.bubble)))
    end
end
