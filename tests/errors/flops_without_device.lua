-- expect: tests/errors/flops_without_device.lua:4: ps.run: layers give FLOPs but the cluster has no device flops
local ps = require "pipesim"
local layers = { { fwd_flops = 1e12 }, { fwd_flops = 1e12 } }
ps.run{ layers = layers, stages = 2, microbatches = 2 }
