-- A sweep whose run function records a run of its own (a baseline) before
-- returning its point's run table, tagged with the baseline's id
-- (tests/cli_workers.sh, issue 27 item 8): under --jobs the ids ps.run
-- returns inside the run function must be the ids stored, as with --jobs 1.
-- -D from=K: only points with microbatches >= K record a baseline.
local ps = require "pipesim"
local layers = { { fwd_time = 1e-3 }, { fwd_time = 2e-3 } }
local from = ps.args.from or 1
local rs = ps.sweep{ name = "nested", space = { microbatches = { 1, 2, 3, 4, 5, 6, 7, 8 } },
    run = function(p)
        local base
        if p.microbatches >= from then
            base = ps.run{ layers = layers, stages = 2, microbatches = p.microbatches,
                record = "summary", name = "baseline" }.id
        end
        return { layers = layers, stages = 2, microbatches = p.microbatches, schedule = "gpipe",
            record = "summary", name = "point", tags = { baseline = base } }
    end }
for _, r in ipairs(rs) do print(r.point_index, r.id) end
