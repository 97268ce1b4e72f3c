-- expect: tests/errors/search_zero_stage.lua:6: ps.search: space.zero[2] must be 0 or 1 (ZeRO stage 1 is Megatron's distributed optimizer; stages 2 and 3, which also partition gradients and weights, are not modelled, and DeepSpeed refuses them with pipeline parallelism), got 3
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("A100", 1))
local model = { layers = 4, hidden = 256, heads = 4, seq = 128, vocab = 1024 }
-- ZeRO-3 partitions the weights: not modelled, refused by name
ps.search{ model = model, cluster = c, gpus = 8, global_batch = 16,
    space = { zero = { 1, 3 } } }
