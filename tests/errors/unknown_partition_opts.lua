-- expect: tests/errors/unknown_partition_opts.lua:5: partition.resolve: opts: unknown field 'flops_rte' (did you mean 'flops_rate'?)
local ps = require "pipesim"

local layers = { { fwd_time = 1 }, { fwd_time = 2 } }
ps.partition.resolve("time", layers, 2, { flops_rte = 1e12 })
