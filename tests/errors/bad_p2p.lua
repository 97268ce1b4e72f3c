-- expect: tests/errors/bad_p2p.lua:4: ps.run: field 'p2p': unknown mode 'async' (expected rendezvous, eager or pytorch)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = layers, stages = 2, microbatches = 2, p2p = "async" }
