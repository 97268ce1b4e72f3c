-- expect: tests/errors/megatron_cp_deferred.lua:5: megatron: flag 'hybrid_context_parallel' (context parallelism) is not modelled yet; pipesim cannot run this launch script
-- Hybrid context parallelism is not modelled: refused by name, never
-- silently dropped (context_parallel_size itself is, docs/parallelism.md).
local ps = require "pipesim"
ps.models.megatron{ hybrid_context_parallel = true, num_layers = 2, hidden_size = 64,
    num_attention_heads = 4, seq_length = 16, vocab_size = 128, world_size = 2 }
