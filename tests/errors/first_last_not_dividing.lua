-- expect: tests/errors/first_last_not_dividing.lua:6: ps.run: partition { first = 1 }: the remaining 3 blocks do not divide evenly over 2 stages
local ps = require "pipesim"
-- toy has 4 blocks: 1 on the first stage leaves 3 for the other 2 stages,
-- which Megatron-LM rejects too (they must divide evenly)
local layers = ps.models.preset("toy")
ps.run{ layers = layers, stages = 3, microbatches = 4, partition = { first = 1 } }
