-- expect: tests/errors/list_sparse_links.lua:5: ps.cluster: field 'links' must be a list without holes: links[2] is nil but links[3] is set
local ps = require "pipesim"

local bw = "50 GB/s"
ps.cluster{ ranks = 3, links = { [1] = { 0, 1, bandwidth = bw }, [3] = { 1, 2, bandwidth = bw } } }
