-- expect: tests/errors/unknown_grad_sync_bucket_size.lua:5: ps.run: grad_sync: unknown field 'bucket_size' (known: algorithm, bucket, bucketed, first_bucket, overlap, overlap_param_gather, param_gather_start, protocol)
local ps = require "pipesim"
local layers = { { fwd_time = 1 }, { fwd_time = 1 } }

ps.run{ layers = layers, stages = 2, microbatches = 2, grad_sync = { bucket_size = "25 MB" } }
