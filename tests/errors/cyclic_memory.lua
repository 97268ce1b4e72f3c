-- expect: tests/errors/cyclic_memory.lua:7: ps.run: memory: unknown field 'self'
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

local t = {}
t.self = t
ps.run{ layers = layers, stages = 2, microbatches = 2, memory = t }
