-- make bench (issue 28): one collective on a DGX cluster under max-min fair
-- sharing, where many flows start and end at one instant and share one
-- solve of the network (core/net/flow.c net_settle). -D device=NAME
-- ("GB200 NVL72"), -D nodes=N (1), -D op=OP (allreduce), -D algorithm=A
-- (auto), -D bytes=B (4096), -D record=summary|events (summary).
--   build/pipesim run tests/bench/coll_dgx.lua -o /tmp/c.db
--   build/pipesim run tests/bench/coll_dgx.lua -D device=H100 -D nodes=128 \
--     -D algorithm=ring -D bytes=1073741824 -o /tmp/c.db
local ps = require "pipesim"
local a = ps.args
ps.progress(false)
local c = ps.cluster(ps.clusters.dgx(a.device or "GB200 NVL72", a.nodes or 1))
local t0 = os.clock()
local r = ps.collective{ cluster = c, op = a.op or "allreduce", algorithm = a.algorithm or "auto",
    bytes = a.bytes or 4096, record = a.record or "summary", name = "coll_dgx" }
print(string.format("pipesim %s %s on %d GPUs: simulated %.17g s in %.3f s CPU (a18f1fd: " ..
    "1.7 s for the default NVL72 case)", r.algorithm, a.op or "allreduce", c.ranks, r.time,
    os.clock() - t0))
