-- expect: tests/errors/list_sparse_layers.lua:6: ps.run: field 'layers' must be a list without holes: layers[2] is nil but layers[3] is set
local ps = require "pipesim"

local l = { fwd_time = 1 }
-- a hole used to drop layers 3 and after without a word
ps.run{ layers = { [1] = l, [3] = l }, stages = 1, microbatches = 2 }
