-- expect: tests/errors/coll_unknown_op.lua:4: ps.collective: unknown collective op 'allreduc' (expected allreduce, reduce_scatter, allgather, broadcast, reduce, alltoall, sendrecv)
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
ps.collective{ cluster = c, op = "allreduc", bytes = "1 MB" }
