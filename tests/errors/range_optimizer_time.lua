-- expect: tests/errors/range_optimizer_time.lua:5: ps.run: field 'optimizer_time' must not be negative, got '-1 ms'
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, optimizer_time = "-1 ms" }
