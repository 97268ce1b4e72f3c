-- expect: tests/errors/list_layers_named_key.lua:5: ps.run: field 'layers' must be a list, but has the key 'first'
local ps = require "pipesim"

local l = { fwd_time = 1 }
ps.run{ layers = { l, l, first = l }, stages = 1, microbatches = 2 }
