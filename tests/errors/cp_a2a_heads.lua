-- expect: tests/errors/cp_a2a_heads.lua:6: ps.run: cp_comm_type "a2a" needs the heads (8) and kv_heads (8) divisible by tp x cp = 16 (Transformer Engine: num_heads % cp_size == 0 for Q, K, V)
-- a2a (DeepSpeed-Ulysses) scatters the heads over the CP ranks.
local ps = require "pipesim"
local layers = ps.models.transformer{ layers = 1, hidden = 256, heads = 8, seq = 1024,
    vocab = 128, flash_attention = true }
ps.run{ cluster = ps.cluster(ps.clusters.dgx("H100", 2)), layers = layers, stages = 1,
    microbatches = 1, tp = 2, cp = 8, cp_comm_type = "a2a" }
