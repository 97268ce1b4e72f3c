-- expect: tests/errors/ep_etp_below_tp_one_ep.lua:7: ps.run: expert data-parallel group 0 mixes ranks pipesim simulates with tensor-parallel ranks it folds into their group's rank 0 (etp unlike tp in this layout): not modelled; give etp = tp
local ps = require "pipesim"
-- tp 2 with ep 1 and etp 1: the experts' data-parallel group takes TP rank
-- 1 of each pair, which pipesim folds into TP rank 0
local model = ps.models.transformer{ layers = 2, hidden = 512, heads = 8, seq = 512, vocab = 8192,
    experts = 8, topk = 2, expert_ffn = 1024 }
ps.run{ cluster = ps.cluster(ps.clusters.dgx("H100", 1)), layers = model, stages = 1,
    microbatches = 2, tp = 2, dp = 4, ep = 1, etp = 1, sequence_parallel = true }
