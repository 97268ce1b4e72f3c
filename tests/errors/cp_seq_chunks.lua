-- expect: tests/errors/cp_seq_chunks.lua:6: ps.run: cp = 3 needs the sequence length (1024) divisible by 2 x cp = 6 (Megatron's load-balanced causal split into 2 cp chunks)
-- Context parallelism splits each sequence into 2 cp chunks.
local ps = require "pipesim"
local layers = ps.models.transformer{ layers = 1, hidden = 256, heads = 8, seq = 1024,
    vocab = 128, flash_attention = true }
ps.run{ cluster = ps.cluster(ps.clusters.dgx("H100", 1)), layers = layers, stages = 1,
    microbatches = 1, cp = 3 }
