-- expect: tests/errors/search_zero_stage.lua:6: ps.search: space.zero[2] must be 0, 1, 2 or 3 (ZeRO's stage: 1 Megatron's distributed optimizer, 2 and 3 Megatron-FSDP's optim_grads and optim_grads_params; docs/sharding.md), got 4
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("A100", 1))
local model = { layers = 4, hidden = 256, heads = 4, seq = 128, vocab = 1024 }
-- ZeRO's stages are 0 to 3: a fourth is refused by name
ps.search{ model = model, cluster = c, gpus = 8, global_batch = 16,
    space = { zero = { 1, 4 } } }
