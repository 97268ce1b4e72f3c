-- expect: tests/errors/range_transformer_layers.lua:5: transformer: field 'layers' must be an integer in 1..16777216, got 1099511627776.0
local ps = require "pipesim"

-- 2^40 layers used to build table after table until memory ran out
ps.models.transformer{ layers = 2^40, hidden = 64, heads = 4, seq = 128, vocab = 100 }
