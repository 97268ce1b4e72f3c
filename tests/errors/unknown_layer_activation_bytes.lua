-- expect: tests/errors/unknown_layer_activation_bytes.lua:5: ps.run: layers[1]: unknown field 'activation_bytes' (known: act_bytes, active_params, bwd_flops
local ps = require "pipesim"

local layers = { { fwd_time = 1, activation_bytes = "1 GB" }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 2 }
