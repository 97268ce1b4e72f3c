-- Issue 27 item 1: a sweep's workers forked right after a run with a full
-- timeline, whose commit left the recorder's writer thread checkpointing
-- inside SQLite. Before the fix a worker inherited SQLite's mutex locked and
-- hung in rec_open within 60 rounds, every time (tests/cli_fork.sh).
-- -D rounds=N (default 60), -D jobs=N (default 2).
local ps = require "pipesim"
local L = {}
for i = 1, 8 do L[i] = { fwd_time = 0.01, act_bytes = "1 GiB", out_bytes = "1 MiB" } end
local C = ps.cluster{ ranks = 8, link = { bandwidth = "10 GB/s", latency = "1 us" } }
for i = 1, ps.args.rounds or 60 do
    ps.run{ cluster = C, layers = L, stages = 8, microbatches = 256 }
    local r = ps.sweep{ name = "s" .. i, points = { { microbatches = 4 }, { microbatches = 5 } },
        jobs = ps.args.jobs or 2,
        base = { cluster = C, layers = L, stages = 4, microbatches = 8, record = "summary" } }
    -- the ids the sweep returns are the ids stored
    print(r[1].id, r[2].id)
end
