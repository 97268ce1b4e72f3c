-- A sweep of 4 points whose third (point_index 2) waits for a line on the
-- FIFO -D fifo=PATH (io.open: sandbox-safe), for tests/cli_merge.sh: shard
-- 0/2 is still being written while the test merges it (issue 27 item 6).
local ps = require "pipesim"
local l = { { fwd_time = 1e-3 }, { fwd_time = 2e-3 } }
ps.sweep{ name = "pause", points = { { microbatches = 1 }, { microbatches = 2 },
    { microbatches = 3 }, { microbatches = 4 } },
    run = function(p)
        if p.microbatches == 3 and ps.args.fifo then
            local f = assert(io.open(ps.args.fifo, "r"))
            f:read("l")
            f:close()
        end
        return { layers = l, stages = 2, microbatches = p.microbatches, record = "summary" }
    end }
