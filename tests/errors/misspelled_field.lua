-- expect: tests/errors/misspelled_field.lua:4: ps.run: unknown field 'microbatchs' (did you mean 'microbatches'?)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatchs = 4 }
