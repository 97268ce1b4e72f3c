-- expect: tests/errors/ep_etp_below_tp_one_ep.lua:8: ps.run: zero = 2 with etp = 1 unlike tp = 2 is not modelled (the experts' shards span the expert-data-parallel group)
local ps = require "pipesim"
-- tp 2 with ep 1 and etp 1: the experts' data-parallel group takes both
-- TP ranks of each pair (simulated since the TP rank pipesim folds joins
-- from its twin's lane); ZeRO-2/3 would shard the experts over it
local model = ps.models.transformer{ layers = 2, hidden = 512, heads = 8, seq = 512, vocab = 8192,
    experts = 8, topk = 2, expert_ffn = 1024 }
ps.run{ cluster = ps.cluster(ps.clusters.dgx("H100", 1)), layers = model, stages = 1,
    microbatches = 2, tp = 2, dp = 4, ep = 1, etp = 1, sequence_parallel = true, zero = 2 }
