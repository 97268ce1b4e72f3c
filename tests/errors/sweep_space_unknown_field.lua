-- expect: tests/errors/sweep_space_unknown_field.lua:5: ps.sweep: space: unknown field 'microbatchs' (did you mean 'microbatches'?)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
-- with `base`, the space's coordinates are ps.run fields
ps.sweep{ name = "s", base = { layers = layers, stages = 2 }, space = { microbatchs = { 2, 4 } } }
