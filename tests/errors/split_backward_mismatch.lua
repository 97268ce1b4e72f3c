-- expect: tests/errors/split_backward_mismatch.lua:4: ps.run: layers[2]: backward 3 s differs from its input part 1 s + weight part 1 s
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1, bwd_time = 3, bwd_input_time = 1, bwd_weight_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 1, schedule = "zb_h1" }
