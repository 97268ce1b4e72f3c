-- A --jobs sweep (tests/cli_sweep.sh) of 20 points, 2 a chunk with 2
-- workers, whose 4th point's run is named "boom": with a trigger in each
-- worker's scratch database (PIPESIM_TEST_SCRATCH_SQL) that rolls back the
-- transaction on that name, as SQLite does itself on a full disk or an I/O
-- error, the worker's batch loses point 3's run, and "N runs added" must
-- not count it. ps.sweep's error is caught.
local ps = require "pipesim"
local layers = { { fwd_time = 1e-3 }, { fwd_time = 1e-3 } }
local function run(name, m)
    return { layers = layers, stages = 2, microbatches = m, record = "summary", name = name }
end
ps.run(run("before", 2))
local ms = {}
for i = 1, 20 do ms[i] = i end
local ok, e = pcall(ps.sweep, { name = "lost", space = { microbatches = ms },
    run = function(p) return run(p.microbatches == 4 and "boom" or "kept", p.microbatches) end })
if not ok then print(e) end
ps.run(run("after", 2))
