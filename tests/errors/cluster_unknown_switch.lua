-- expect: tests/errors/cluster_unknown_switch.lua:4: ps.cluster: field 'links[3]': unknown node 'spine2' (not a rank and not in 'switches')
local ps = require "pipesim"
local bw = "50 GB/s"
ps.cluster{ ranks = 2, switches = { "spine" }, links = { { 0, "spine", bandwidth = bw }, { 1, "spine", bandwidth = bw }, { 1, "spine2", bandwidth = bw } } }
