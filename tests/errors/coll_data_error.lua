-- expect: tests/errors/coll_data_error.lua:5: ps.collective: field 'data': data(2, 17) failed: tests/errors/coll_data_error.lua:4: no value for element 17
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
local function data(rank, i) if i == 17 and rank == 2 then error("no value for element " .. i) end return rank end
ps.collective{ cluster = c, op = "allreduce", bytes = 4 * 32, data = data }
