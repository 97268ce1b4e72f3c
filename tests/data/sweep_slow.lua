-- A sweep whose points each take about -D seconds=S (default 0.5) of CPU in
-- Lua, for tests/cli_workers.sh: workers alive long enough to be killed or
-- stopped (issue 27 item 7).
local ps = require "pipesim"
local layers = { { fwd_time = 1e-3 }, { fwd_time = 1e-3 } }
local s = ps.args.seconds or 0.5
ps.sweep{ name = "slow", space = { microbatches = { 1, 2, 3, 4, 5, 6, 7, 8 } },
    run = function(p)
        local t = os.clock()
        while os.clock() - t < s do end
        return { layers = layers, stages = 2, microbatches = p.microbatches, record = "summary" }
    end }
