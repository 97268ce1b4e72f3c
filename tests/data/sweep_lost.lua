-- A sweep whose third point's run is named "boom", for tests/cli_sweep.sh:
-- with a trigger that rolls back the transaction on that name (as SQLite
-- does itself on a full disk or an I/O error) the batch's earlier runs are
-- lost, and "N runs added" must not count them. ps.sweep's error is caught.
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, device = ps.clusters.device("A100-80GB") }
local m = ps.models.preset("llama2-7b", { microbatch = 2 })
ps.run{ layers = m, stages = 4, microbatches = 4, cluster = c, record = "summary", name = "before" }
local ok, e = pcall(ps.sweep, { name = "lost", space = { microbatches = { 4, 8, 16 } },
    run = function(p)
        return { layers = m, stages = 4, microbatches = p.microbatches, cluster = c, record = "summary",
                 name = p.microbatches == 16 and "boom" or "kept" }
    end })
if not ok then print(e) end
ps.run{ layers = m, stages = 4, microbatches = 2, cluster = c, record = "summary", name = "after" }
