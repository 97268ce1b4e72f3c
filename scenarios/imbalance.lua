-- imbalance: the slowest stage sets the pipeline's cycle.
--
-- Six layers of 25 ms forward each on 2 GPUs. Split {2, 4}, stage 0 takes
-- 50 ms and stage 1 100 ms per microbatch forward (backward twice that):
-- in steady state every microbatch waits for stage 1, so the step takes
-- about m * 300 ms + 150 ms and stage 0 idles a third of the time. The
-- balanced split {3, 3} puts 75 ms on both.
local ps = require "pipesim"

local layers = {}
for i = 1, 6 do layers[i] = { fwd_time = "25 ms", out_bytes = 0 } end
local m = 8

local function run(name, partition)
    local r = ps.run{ name = name, layers = layers, stages = 2,
                        microbatches = m, schedule = "1f1b",
                        partition = partition }
    print(string.format("%-12s partition {%s}: step %s, bubble %s (stage 0 %s, "
        .. "stage 1 %s), imbalance %.2f", name, table.concat(partition, ", "),
        ps.seconds(r.makespan), ps.pct(r.bubble), ps.pct(r.stage_bubble[1]),
        ps.pct(r.stage_bubble[2]), r.imbalance))
    return r
end

local slow = run("imbalanced", { 2, 4 })
local fair = run("balanced", { 3, 3 })
ps.show(slow)
-- With the slow stage at 100 ms + 200 ms per microbatch the step is bounded
-- below by m * 300 ms on that stage plus the 150 ms fill of stage 0.
print(string.format("slow-stage bound m*(100+200) ms + 50 + 100 ms = %s; "
    .. "balanced is %.1f%% faster", ps.seconds(m * 0.3 + 0.15),
    100 * (1 - fair.makespan / slow.makespan)))
