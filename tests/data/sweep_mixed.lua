-- tests/cli_sweep.sh: a sweep whose chunks under --jobs mix summary runs
-- (a worker ships them to the writer as bytes, core/rec/ship.c) with runs
-- at the events level (written to the worker's scratch database, which
-- first takes the runs shipped before them): 48 points, every third one
-- with a timeline, so that each chunk of 3 points has both kinds.
local ps = require "pipesim"
local c = ps.cluster{ ranks = 8, device = ps.clusters.device("A100-80GB") }
local m = ps.models.preset("llama2-7b", { microbatch = 2 })
local mbs = {}
for i = 1, 24 do mbs[i] = 4 + i end
local rs = ps.sweep{ name = "mixed",
    space = { schedule = { "1f1b", "gpipe" }, microbatches = mbs },
    run = function(p)
        local events = (p.microbatches + (p.schedule == "gpipe" and 1 or 0)) % 3 == 0
        return { layers = m, stages = 4, microbatches = p.microbatches, schedule = p.schedule,
                 cluster = c, record = events and "events" or "summary" }
    end }
for _, r in ipairs(rs) do
    print(string.format("%d %s %d %.17g", r.point_index, r.id, r.microbatches, r.makespan))
end
