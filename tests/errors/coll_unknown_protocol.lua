-- expect: tests/errors/coll_unknown_protocol.lua:4: ps.collective: field 'protocol': unknown protocol 'll256' (expected ll, ll128, simple, auto, none)
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("h100", 2))
ps.collective{ cluster = c, op = "allreduce", protocol = "ll256", bytes = "1 MB" }
