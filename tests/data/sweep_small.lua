-- A small sweep for tests/cli_sweep.sh: 2 schedules x 3 microbatch counts
-- on a Llama-2-7B preset (so runs record model, seq_length, micro_batch,
-- global_batch), tagged; one run before the sweep and one after, outside it.
-- -D record=events records timelines; -D fail_at=I makes point I's run
-- table bad; -D op=1 sweeps a collective's sizes too.
local ps = require "pipesim"
local c = ps.cluster{ ranks = 8, device = ps.clusters.device("A100-80GB") }
local m = ps.models.preset("llama2-7b", { microbatch = 2 })
ps.run{ layers = m, stages = 4, microbatches = 4, cluster = c, record = "summary",
          name = "before" }
local rs = ps.sweep{ name = ps.args.sweep or "small",
    space = { schedule = { "1f1b", "gpipe" }, microbatches = { 4, 8, 16 } },
    run = function(p)
        if ps.args.fail_at and p.microbatches == 8 and p.schedule == "gpipe" then
            return { layers = m, stages = 4, microbatches = 0 }
        end
        return { layers = m, stages = 4, dp = 2, microbatches = p.microbatches, schedule = p.schedule,
                   cluster = c, record = ps.args.record or "summary", tags = { team = "infra", gbs = 1024 } }
    end }
ps.run{ layers = m, stages = 4, microbatches = 2, cluster = c, record = "summary", name = "after" }
for _, r in ipairs(rs) do
    print(string.format("%d %s %d %.17g", r.point_index, r.id, r.microbatches, r.makespan))
end
if ps.args.op then
    local cs = ps.sweep{ name = "sizes", space = { bytes = { "1 MiB", "16 MiB", "256 MiB" } },
        base = { op = "allreduce", cluster = c, record = ps.args.record or "summary" } }
    for _, r in ipairs(cs) do print(string.format("%d %s %.17g", r.point_index, r.id, r.time)) end
end
